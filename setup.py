"""The compiled annotation hot paths (core/_hotpath.c); everything else is in pyproject.toml."""
from setuptools import Extension, setup

# optional: when it cannot be built (no C compiler or Python headers), npuprof runs the same
# code in Python (core/recorder.py)
setup(ext_modules=[Extension("npuprof._hotpath", ["core/_hotpath.c"], optional=True)])
