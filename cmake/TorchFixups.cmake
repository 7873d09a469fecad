# Fix-ups for building against any LibTorch, beside Debian's packages.
#
# LibTorch 2.x installs its own {fmt} (v11/v12) headers in <prefix>/include/fmt.
# That folder is on the include path of every target that links torch, ahead of
# /usr/include, so <fmt/format.h> resolves to torch's copy while Debian's spdlog
# was built against Debian's fmt 9: every file that includes spdlog then fails
# to compile ("'basic_format_string' is not a member of 'fmt'").
#
# We never touch the user's LibTorch. Instead, the build gets a folder of links
# to every entry of <prefix>/include except fmt, and the torch targets'
# include paths point there. LibTorch's public headers do not need its fmt
# (only profiler internals include it), so nothing is lost.
#
# vit_torch_without_fmt() runs after find_package(Torch) and updates the
# imported targets and TORCH_INCLUDE_DIRS in the caller's scope.

# Sets out_var to the list ARGN with the folder `from` (compared as real
# paths, so either spelling of it matches) replaced by `to`.
function(_vit_swap_include out_var from to)
  set(result)
  foreach(dir IN LISTS ARGN)
    get_filename_component(dir_real "${dir}" REALPATH)
    if(dir_real STREQUAL from)
      list(APPEND result "${to}")
    else()
      list(APPEND result "${dir}")
    endif()
  endforeach()
  set(${out_var} "${result}" PARENT_SCOPE)
endfunction()

function(vit_torch_without_fmt)
  set(include_dir "${TORCH_INSTALL_PREFIX}/include")
  if(NOT EXISTS "${include_dir}/fmt")
    return()
  endif()
  get_filename_component(include_real "${include_dir}" REALPATH)
  set(shim "${CMAKE_BINARY_DIR}/torch-include-without-fmt")
  file(MAKE_DIRECTORY "${shim}")
  file(GLOB entries RELATIVE "${include_real}" "${include_real}/*")
  foreach(entry IN LISTS entries)
    if(NOT entry STREQUAL "fmt" AND NOT IS_SYMLINK "${shim}/${entry}")
      file(CREATE_LINK "${include_real}/${entry}" "${shim}/${entry}" SYMBOLIC)
    endif()
  endforeach()

  foreach(target IN ITEMS torch torch_cpu torch_cuda c10 c10_cuda torch_library torch_cpu_library
                          torch_cuda_library)
    if(TARGET ${target})
      get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
      if(dirs)
        _vit_swap_include(dirs "${include_real}" "${shim}" ${dirs})
        set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
      endif()
    endif()
  endforeach()
  _vit_swap_include(dirs "${include_real}" "${shim}" ${TORCH_INCLUDE_DIRS})
  set(TORCH_INCLUDE_DIRS "${dirs}" PARENT_SCOPE)
  message(STATUS "LibTorch's bundled fmt hidden from the include path (${shim})")
endfunction()

# TorchConfig.cmake finds some of its libraries (c10, kineto, ...) with
# find_library(... PATHS <prefix>/lib), which searches the system folders
# first. With Debian's libtorch-dev also installed, a pip LibTorch then links
# Debian's libc10.so beside its own libc10.so: two copies of the core runtime
# in one process. vit_torch_libraries_from_one_install() drops every LibTorch
# library that lies outside the LibTorch that was found, in the caller's
# TORCH_LIBRARIES.
function(vit_torch_libraries_from_one_install)
  get_filename_component(prefix_real "${TORCH_INSTALL_PREFIX}" REALPATH)
  set(kept)
  foreach(lib IN LISTS TORCH_LIBRARIES)
    get_filename_component(name "${lib}" NAME)
    get_filename_component(lib_real "${lib}" REALPATH)
    string(FIND "${lib_real}" "${prefix_real}/" inside)
    if(IS_ABSOLUTE "${lib}" AND name MATCHES "^lib(c10|torch|kineto)" AND NOT inside EQUAL 0)
      message(STATUS "Not linking ${lib}: it belongs to another LibTorch than ${TORCH_INSTALL_PREFIX}")
    else()
      list(APPEND kept "${lib}")
    endif()
  endforeach()
  set(TORCH_LIBRARIES "${kept}" PARENT_SCOPE)
endfunction()

# A pip LibTorch loads the CUDA libraries its wheel ships (site-packages/
# nvidia/*/lib, through its own RUNPATH). At link time, though, ld resolves
# libtorch_cuda.so's dependencies through our executables' rpath first, which
# holds the CUDA toolkit's folder: an older libnccl there fails the link with
# "undefined reference to ncclCommGrow". vit_torch_wheel_link_paths() points
# the link-time search (-rpath-link, which changes nothing at run time) at the
# wheel's own libraries.
function(vit_torch_wheel_link_paths)
  file(GLOB wheel_lib_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  foreach(dir IN LISTS wheel_lib_dirs)
    get_filename_component(dir "${dir}" REALPATH)
    add_link_options("LINKER:-rpath-link,${dir}")
  endforeach()
endfunction()
