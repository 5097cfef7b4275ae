/**
 * cuda-magic's JupyterLab extension: the body of a cell that starts with one of cuda-magic's
 * cell magics (%%cuda, %%cuda_compare, %%cuda_header, %%cuda_tune) is highlighted as C++; the
 * magic line, and every other cell, keep IPython's highlighting.
 *
 * How: the "ipython" language of JupyterLab's language registry (the mode of Python kernels'
 * cells) is given a parser that parses the cell as Python, as before, and mounts CodeMirror's
 * C++ parser over the lines after the magic (lezer's parseMixed, an overlay).  Nothing is
 * written into the notebook: without the extension the same notebook shows as before.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { LanguageSupport } from '@codemirror/language';
import { cppLanguage } from '@codemirror/lang-cpp';
import { python, pythonLanguage } from '@codemirror/lang-python';
import { parseMixed } from '@lezer/common';

/** A cell magic of cuda-magic at the start of a cell: its name, then a space or the line end. */
export const MAGIC = /^%%(cuda|cuda_compare|cuda_header|cuda_tune)(?=[ \t\r\n]|$)/;

/** IPython, with the body of a cuda-magic cell parsed as C++. */
export function ipythonWithCuda(): LanguageSupport {
  const language = pythonLanguage.configure(
    {
      wrap: parseMixed((node, input) => {
        if (!node.type.isTop) {
          return null;
        }
        const head = input.read(0, Math.min(input.length, 16));
        if (!MAGIC.test(head)) {
          return null;
        }
        let end = 0;        // the end of the magic line (it may be long: read in steps)
        for (; end < input.length; end += 256) {
          const at = input.read(end, Math.min(input.length, end + 256)).indexOf('\n');
          if (at >= 0) {
            end += at;
            break;
          }
        }
        if (end >= input.length - 1) {
          return null;
        }
        return { parser: cppLanguage.parser, overlay: [{ from: end + 1, to: input.length }] };
      })
    },
    'ipython'
  );
  return new LanguageSupport(language, python().support);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'cuda-magic-highlight:plugin',
  description: "Highlights the body of cuda-magic's cell magics as C++.",
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (app: JupyterFrontEnd, languages: IEditorLanguageRegistry) => {
    const spec = languages.findByName('ipython');
    if (!spec) {
      console.warn('cuda-magic-highlight: no "ipython" language to extend');
      return;
    }
    // the registry's entry for IPython: its loader now gives the language above (read-only in
    // the interface, a plain object in the registry); a language loaded before is dropped
    const entry = spec as { load: () => Promise<LanguageSupport>; support?: LanguageSupport };
    entry.load = async () => ipythonWithCuda();
    entry.support = undefined;
  }
};

export default plugin;
