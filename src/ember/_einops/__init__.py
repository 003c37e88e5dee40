"""einops on ember tensors, with nothing for the user to do.

einops finds a tensor's backend among the subclasses of its ``AbstractBackend`` whose
``framework_name`` is an imported module; its torch backend looks for ``torch``, which an
``import ember as torch`` program never imports. ember brings its own backend, ``EmberBackend``
(``backend.py``), and its own ``einops.layers.torch`` (``layers.py``); ``hook.py`` puts them in
place when the program imports einops, so ``import ember`` itself never imports einops.
"""
