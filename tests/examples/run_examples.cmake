# Builds and runs the two embedding examples the way a downstream project would:
# find_package(tfg) against an installed tree, and add_subdirectory on the source tree.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "`${ARGN}` exited ${rc}\n${out}\n${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
endfunction()
set(launcher "")
find_program(CCACHE ccache)
if(CCACHE)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
endif()
file(REMOVE_RECURSE ${WORK})

run(${CMAKE_COMMAND} --install ${BIN} --prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} -S ${SRC}/examples/embed_find_package -B ${WORK}/fp -G Ninja
    -DCMAKE_PREFIX_PATH=${WORK}/prefix ${launcher})
run(${CMAKE_COMMAND} --build ${WORK}/fp)
run(${WORK}/fp/diamond)
if(NOT OUT MATCHES "gelu" OR OUT MATCHES "relu")
  message(FATAL_ERROR "find_package example: the rewrite did not show in the DOT output:\n${OUT}")
endif()

run(${CMAKE_COMMAND} -S ${SRC}/examples/embed_subdirectory -B ${WORK}/sd -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DTFG_LIBTORCH=${LIBTORCH} -DTFG_PYTHON=${PYTHON} ${launcher})
run(${CMAKE_COMMAND} --build ${WORK}/sd)
run(${WORK}/sd/count_aliases ${SRC}/tests/data/tiny_mix.pt f32[1,3,8,8])
if(NOT OUT MATCHES "nodes, [1-9][0-9]* edges share storage")
  message(FATAL_ERROR "add_subdirectory example: unexpected output:\n${OUT}")
endif()
