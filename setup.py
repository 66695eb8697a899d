"""The compiled hot paths: annotations (core/_hotpath.c) and text rows (core/export/_rowrender.c);
everything else is in pyproject.toml."""
from setuptools import Extension, setup

# optional: when one cannot be built (no C compiler or Python headers), npuprof runs the same
# code in Python (core/recorder.py, core/export/textrows.py)
setup(ext_modules=[Extension("npuprof._hotpath", ["core/_hotpath.c"], optional=True),
                   Extension("npuprof.export._rowrender", ["core/export/_rowrender.c"], optional=True)])
