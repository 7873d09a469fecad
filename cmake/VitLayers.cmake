# One static library per layer of src/, linked only to the layers below it
# (docs/architecture.md has the graph). The build enforces the graph twice:
#  - includes: a layer's library sees only its own headers and those of the
#    layers it links, through an include root of its own in the build folder
#    (links to include/vit/<layer>), so `#include "vit/train/..."` in model/
#    fails to compile;
#  - calls: vit_layer_check_<layer> links the whole library with nothing but
#    the layers below it, so a call upward fails to link.

# vit_layer(NAME [HEADERS folder|BASE] [DEPS layer...])
#   NAME     src/NAME/*.cpp (BASE: src/*.cpp and the config's src/config/*.cpp)
#            into vit_NAME
#   DEPS     the layers it may use, without the vit_ prefix
function(vit_layer name)
  cmake_parse_arguments(ARG "BASE" "" "DEPS" ${ARGN})
  set(root ${CMAKE_BINARY_DIR}/layers/${name})
  file(MAKE_DIRECTORY ${root}/vit)
  if(ARG_BASE)
    file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.cpp
         ${PROJECT_SOURCE_DIR}/src/config/*.cpp)
    file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/vit/*.hpp)
    foreach(header IN LISTS headers)
      get_filename_component(file ${header} NAME)
      file(CREATE_LINK ${header} ${root}/vit/${file} SYMBOLIC)
    endforeach()
  else()
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/vit/${name} ${root}/vit/${name} SYMBOLIC)
  endif()
  add_library(vit_${name} STATIC ${sources})
  target_include_directories(vit_${name} PUBLIC ${root})
  target_include_directories(vit_${name} SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
  foreach(dep IN LISTS ARG_DEPS)
    target_link_libraries(vit_${name} PUBLIC vit_${dep})
  endforeach()
  vit_warnings(vit_${name})
  if(VIT_USE_PCH)
    if(ARG_BASE)
      target_precompile_headers(vit_${name} PRIVATE <torch/torch.h>)
    else()
      target_precompile_headers(vit_${name} REUSE_FROM vit_base)
    endif()
  endif()
  # An executable of the whole library and the layers below it, nothing else:
  # built with everything, so an upward call breaks the build.
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.24)
    add_executable(vit_layer_check_${name} ${PROJECT_SOURCE_DIR}/cmake/layer_check_main.cpp)
    target_link_libraries(vit_layer_check_${name} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,vit_${name}>")
  endif()
endfunction()
