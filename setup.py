"""Only for ``pip install -e .``: setuptools' editable install skips ``data-files`` (its
``_run_install("data")`` asks the distribution for ``has_data``, which it does not have), and
JupyterLab finds the highlighting extension only in ``share/jupyter/labextensions``.  Everything
else is in pyproject.toml; a wheel or a plain ``pip install .`` needs none of this."""

from setuptools import setup
from setuptools.command.editable_wheel import editable_wheel


class EditableWithData(editable_wheel):
    def _run_install(self, category):
        if category == "data" and self.distribution.has_data_files():
            self.run_command("install_data")        # copied, as a wheel would install them
        else:
            super()._run_install(category)


setup(cmdclass={"editable_wheel": EditableWithData})
