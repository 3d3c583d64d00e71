# Build settings for llama-cpp-python, read by llama.cpp's CMake through
#   CMAKE_ARGS="-DCMAKE_PROJECT_INCLUDE=/path/to/this/file" pip install ...
#
# It keeps the native build (-march=native: AVX2, AVX-512, VNNI, ... of the build CPU) and leaves
# out AMX only. Some x86-64 VMs advertise AMX (cpuid, and the kernel grants the tile permission)
# but fault on it: a native build then dies with SIGILL at its first decode. Other CPUs, and
# compilers that do not know the flags, are left untouched.
if(ANVIL_LLAMA_BUILD_INCLUDED)
  return()
endif()
set(ANVIL_LLAMA_BUILD_INCLUDED ON)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x64|i[3-6]86)$")
  include(CheckCCompilerFlag)
  foreach(flag -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -mno-amx-fp16 -mno-amx-complex)
    string(MAKE_C_IDENTIFIER "ANVIL_HAS${flag}" var)
    check_c_compiler_flag("${flag}" ${var})
    if(${var})
      add_compile_options(${flag})
    endif()
  endforeach()
  message(STATUS "anvil-local: native build without AMX")
endif()
