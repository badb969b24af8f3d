# Finds the LibTorch that tfg::torch builds against. One build per LibTorch:
#   TFG_LIBTORCH=wheel  (default) the PyPI torch wheel in the project's venv (tools/setup-deps.sh
#                       installs torch 2.15.0 into .venv); headers, libraries and the CMake config
#                       come from that wheel (torch.utils.cmake_prefix_path).
#   TFG_LIBTORCH=system Debian's LibTorch 1.13 (libtorch-dev), found in the system prefix.
# TFG_PYTHON is the Python whose torch matches the build: it writes the zoo, runs repro.py and the
# tests' helper scripts (the venv's for the wheel, Debian's /usr/bin/python3 for 1.13).
# Sets TFG_TORCH_LINK (what tfg::torch links), TFG_TORCH_VERSION and TFG_PYTHON.
set(TFG_LIBTORCH "wheel" CACHE STRING "Which LibTorch: wheel (PyPI torch in the venv) or system (Debian's 1.13)")
set_property(CACHE TFG_LIBTORCH PROPERTY STRINGS wheel system)

if(TFG_LIBTORCH STREQUAL "wheel")
  set(TFG_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH "The Python with the torch this build uses")
  if(NOT EXISTS "${TFG_PYTHON}")
    message(FATAL_ERROR "TFG_LIBTORCH=wheel: ${TFG_PYTHON} does not exist; run tools/setup-deps.sh (it makes the venv "
      "with torch 2.15.0), set TFG_PYTHON to a Python with torch, or configure with -DTFG_LIBTORCH=system for Debian's LibTorch 1.13")
  endif()
  execute_process(COMMAND "${TFG_PYTHON}" -c "import torch, os; print(torch.__version__); print(os.path.dirname(torch.__file__))"
    OUTPUT_VARIABLE _tfg_torch_out RESULT_VARIABLE _tfg_torch_rc ERROR_VARIABLE _tfg_torch_err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _tfg_torch_rc EQUAL 0)
    message(FATAL_ERROR "TFG_LIBTORCH=wheel: ${TFG_PYTHON} cannot import torch:\n${_tfg_torch_err}")
  endif()
  string(REPLACE "\n" ";" _tfg_torch_out "${_tfg_torch_out}")
  list(GET _tfg_torch_out 0 TFG_TORCH_VERSION)
  list(GET _tfg_torch_out 1 TFG_TORCH_PREFIX)
  # The wheel's prefix first: its config finds its own libraries there before a system LibTorch
  # (Debian's libtorch.so in /usr/lib would otherwise answer TorchConfig's find_library calls).
  list(PREPEND CMAKE_PREFIX_PATH "${TFG_TORCH_PREFIX}" "${TFG_TORCH_PREFIX}/share/cmake")
  # The CUDA wheel's config enables CUDA and probes it. CMake 3.25.1 (Debian 12) cannot give nvcc
  # C++20, so the probes are C++17 (tfg has no CUDA sources); a fixed architecture list skips the
  # GPU-detection run, which fails on a machine without a GPU.
  if(NOT DEFINED CMAKE_CUDA_STANDARD)
    set(CMAKE_CUDA_STANDARD 17)
  endif()
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
  endif()
  find_package(Torch REQUIRED)
  get_target_property(_tfg_cpu_loc torch_cpu IMPORTED_LOCATION_RELEASE)
  string(FIND "${_tfg_cpu_loc}" "${TFG_TORCH_PREFIX}/" _tfg_at)
  if(NOT _tfg_at EQUAL 0)
    message(FATAL_ERROR "TFG_LIBTORCH=wheel: libtorch_cpu resolved to ${_tfg_cpu_loc}, not under ${TFG_TORCH_PREFIX}")
  endif()
  # The CPU libraries only: libtorch.so pulls in libtorch_cuda.so and the pip CUDA libraries,
  # which no CPU configuration needs. torch_cpu_library links with --no-as-needed so that the
  # operator registrations are always loaded.
  set(TFG_TORCH_LINK torch_cpu_library c10)
  set(TFG_TORCH_INCLUDE_DIRS ${TORCH_INCLUDE_DIRS})
elseif(TFG_LIBTORCH STREQUAL "system")
  set(TFG_PYTHON "/usr/bin/python3" CACHE FILEPATH "The Python with the torch this build uses")
  find_package(Torch REQUIRED)
  set(TFG_TORCH_LINK ${TORCH_LIBRARIES})
  set(TFG_TORCH_INCLUDE_DIRS "")
  execute_process(COMMAND "${TFG_PYTHON}" -c "import torch; print(torch.__version__)"
    OUTPUT_VARIABLE TFG_TORCH_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT TFG_TORCH_VERSION)
    set(TFG_TORCH_VERSION "${Torch_VERSION}")
  endif()
else()
  message(FATAL_ERROR "TFG_LIBTORCH must be wheel or system, not '${TFG_LIBTORCH}'")
endif()
message(STATUS "tfg: LibTorch ${TFG_TORCH_VERSION} (${TFG_LIBTORCH}); Python ${TFG_PYTHON}")
