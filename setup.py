"""The compiled hot paths: annotations (core/_hotpath.c), text rows (core/export/_rowrender.c) and the
Kineto trace scanner (core/readers/_tracescan.c);
everything else is in pyproject.toml.

Each extension is optional: where one cannot be built (no C compiler or Python headers) the build
prints a WARNING line and npuprof runs the same code in Python (core/recorder.py,
core/export/textrows.py, core/readers/trace_decode.py); a wheel holding neither is tagged pure (``py3-none-any``), as it is.
``NPUPROF_PURE_WHEEL=1`` builds that pure wheel on purpose (for hosts that cannot build them).

setuptools 61 or newer builds it (pyproject.toml's [project] table); the license is given here, as
PEP 639's expression from setuptools 77 on and as the older text field before, so the setuptools
of an offline host's distribution (Debian 12: 66) builds it too.
"""
import os
import sys

import setuptools
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

MIN_SETUPTOOLS = (61, 0)
LICENSE = "Apache-2.0"


def _version(text):
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


SETUPTOOLS = _version(setuptools.__version__)
if SETUPTOOLS < MIN_SETUPTOOLS:
    sys.exit(f"npuprof needs setuptools >= {'.'.join(map(str, MIN_SETUPTOOLS))} to build (pyproject.toml's "
             f"[project] table); this one is {setuptools.__version__}: pip install 'setuptools>=61'")

try:   # setuptools >= 70.1 has it; older ones take the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

EXTENSIONS = [Extension("npuprof._hotpath", ["core/_hotpath.c"], optional=True),
              Extension("npuprof.export._rowrender", ["core/export/_rowrender.c"], optional=True),
              Extension("npuprof.readers._tracescan", ["core/readers/_tracescan.c"], optional=True)]


class OptionalBuildExt(build_ext):
    """Builds each extension it can; says on one line which it could not and what that costs."""

    built = 0

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:   # a compiler missing or failing: the Python twin runs instead
            reason = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            print(f"WARNING: npuprof: {ext.name} was not built ({reason}); npuprof runs its pure-Python "
                  "fallback (annotations cost about 2x, see `npuprof doctor`)", file=sys.stderr, flush=True)
            return
        OptionalBuildExt.built += 1


class HonestBdistWheel(bdist_wheel):
    """A wheel that holds no compiled module is tagged pure (``py3-none-any``), not for one platform."""

    def run(self):
        self.run_command("build")
        if not OptionalBuildExt.built:
            self.root_is_pure = True
        super().run()


pure = os.environ.get("NPUPROF_PURE_WHEEL", "0") not in ("", "0")
license_field = {"license_expression": LICENSE} if SETUPTOOLS >= (77, 0) else {"license": LICENSE}
setup(ext_modules=[] if pure else EXTENSIONS, cmdclass={"build_ext": OptionalBuildExt, "bdist_wheel": HonestBdistWheel},
      **license_field)
