"""``k.verify``: launch on fresh inputs, run the reference on copies, judge each output
(:mod:`.verifying`), with the arrays it works with (:mod:`.buffers`)."""
