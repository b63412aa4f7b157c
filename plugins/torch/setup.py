"""Builds strata_torch against the installed torch:

    pip install --no-build-isolation ./plugins/torch

libstrata is built with CMake from this repository (or taken from an
existing build: STRATA_BUILD_DIR=build) and shipped inside the package next
to the extension, which finds it through its rpath.
"""
import os
import shutil
import subprocess

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PACKAGE = os.path.join(HERE, "strata_torch")


def libstrata():
    """Builds libstrata.so (unless STRATA_BUILD_DIR has one) and copies it into the package."""
    build = os.environ.get("STRATA_BUILD_DIR")
    if build:
        build = os.path.abspath(os.path.join(ROOT, build))
    else:
        build = os.path.join(HERE, "build", "libstrata")
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                               "-DSTRATA_BUILD_TESTS=OFF", "-DSTRATA_BUILD_BENCH=OFF"])
        subprocess.check_call(["cmake", "--build", build, "--target", "strata", "-j", str(os.cpu_count() or 2)])
    lib = os.path.join(build, "libstrata.so.0")
    if not os.path.exists(lib):
        raise SystemExit(f"strata_torch: {lib} is missing; build strata first (scripts/build.sh)")
    shutil.copyfile(lib, os.path.join(PACKAGE, "libstrata.so.0"))  # the file, not the symlink


def cuda_build_options():
    """Compiles the CUDA stream lookup directly (stream_order.cc) when torch was
    built with CUDA and the toolkit's headers are here; otherwise the plugin
    uses torch's device-generic Stream::native_handle()."""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME
    header = os.path.join(CUDA_HOME or "", "include", "cuda_runtime_api.h")
    if not torch.version.cuda or not CUDA_HOME or not os.path.exists(header):
        return {}
    return {"define_macros": [("STRATA_TORCH_CUDA", "1")], "include_dirs": [os.path.join(CUDA_HOME, "include")],
            "libraries": ["c10_cuda"]}


libstrata()
cuda = cuda_build_options()
setup(
    name="strata_torch",
    version="0.1.0",
    description="strata as a torch.distributed backend",
    packages=["strata_torch"],
    package_data={"strata_torch": ["libstrata.so.0", "BUILD_ID"]},
    ext_modules=[
        CppExtension(
            "strata_torch._C",
            sorted(os.path.join("csrc", f) for f in os.listdir(os.path.join(HERE, "csrc")) if f.endswith(".cc")),
            include_dirs=[os.path.join(ROOT, "include"), os.path.join(HERE, "csrc")] + cuda.get("include_dirs", []),
            define_macros=cuda.get("define_macros", []),
            library_dirs=[PACKAGE],
            libraries=[":libstrata.so.0"] + cuda.get("libraries", []),
            # -g0: no debug info (Python's own flags ask for it), which took a third of the compile time
            extra_compile_args=["-O2", "-g0", "-Wall", "-Wno-unused-parameter"],
            extra_link_args=["-Wl,-rpath,$ORIGIN"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    zip_safe=False,
)
