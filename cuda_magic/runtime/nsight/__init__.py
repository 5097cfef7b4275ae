"""Nsight Compute (``k.profile``) and compute-sanitizer (``k.check``): one launch under the tool
in a helper process (:mod:`.run`; the process the tool watches is :mod:`.child`), and what each tool said, as
data (:mod:`.ncu_report`, :mod:`.sanitizer_report`; one import: :mod:`.reports`)."""
