# End-to-end checks of the flowmut command line, as a user runs it.
file(MAKE_DIRECTORY ${WORK})
function(run expect_rc)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
  if(NOT rc EQUAL expect_rc)
    message(FATAL_ERROR "`${ARGN}` exited ${rc}, expected ${expect_rc}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
endfunction()
function(expect_match text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "expected output matching `${regex}`, got:\n${text}")
  endif()
endfunction()

# profile the default seed: summary, equality with module.forward, JSON and DOT outputs
run(0 ${FLOWMUT} profile ${SRC}/tests/data/tiny_mix.pt --json ${WORK}/tiny.json --dot ${WORK}/tiny.dot)
expect_match("${OUT}" "graph +[0-9]+ nodes")
expect_match("${OUT}" "sharing storage in [1-9][0-9]* alias groups")
expect_match("${OUT}" "max abs diff 0 \\(equal\\)")
file(READ ${WORK}/tiny.json json)
string(JSON n_nodes LENGTH "${json}" nodes)
string(JSON first_kind GET "${json}" nodes 0 kind)
if(n_nodes LESS 10)
  message(FATAL_ERROR "JSON has only ${n_nodes} nodes")
endif()
file(READ ${WORK}/tiny.dot dot)
expect_match("${dot}" "^digraph")

# round trip: export writes a .pt that loads and profiles to the same outputs
run(0 ${FLOWMUT} export ${SRC}/tests/data/tiny_mix.pt ${WORK}/tiny_rt.pt)
run(0 ${FLOWMUT} profile ${WORK}/tiny_rt.pt --inputs ${SRC}/tests/data/tiny_mix.inputs.pt)
expect_match("${OUT}" "max abs diff 0 \\(equal\\)")

# bad input: a clear error naming the file, exit code 2, no crash
file(WRITE ${WORK}/garbage.pt "this is not a zip archive")
run(2 ${FLOWMUT} profile ${WORK}/garbage.pt)
expect_match("${ERR}" "garbage.pt: cannot load TorchScript module")

# random inputs from a shape spec; a malformed spec is a clear error
run(0 ${FLOWMUT} profile ${SRC}/tests/data/tiny_mix.pt --shape f32[1,3,8,8] --random 2)
expect_match("${OUT}" "2 profiling inputs")
run(2 ${FLOWMUT} profile ${SRC}/tests/data/tiny_mix.pt --shape f32[1,3,x])
expect_match("${ERR}" "input spec `f32\\[1,3,x\\]`: `x` is not a dimension")

# operators: listing, and a malformed operator file gives file:line:col, the line, a caret, exit 1
run(0 ${FLOWMUT} ops list --json ${SRC}/operators)
string(JSON n_ops LENGTH "${OUT}")
if(n_ops LESS 100)
  message(FATAL_ERROR "ops list --json lists only ${n_ops} operators")
endif()
file(MAKE_DIRECTORY ${WORK}/badops)
file(WRITE ${WORK}/badops/bad.tfg "tfg 1\noperator broken\n  object tensor  primitive insertion  origin tfg\n  anchor %x\n{\n  replace { %c = aten::clone(%z, none) }\n}\n")
run(1 ${FLOWMUT} ops check ${WORK}/badops)
expect_match("${ERR}" "bad.tfg:6:[0-9]+: error\\[E012\\]")
expect_match("${ERR}" "\n +\\| +\\^")

# candidates on the default seed: pairs, retained candidates, legality of every one
run(0 ${FLOWMUT} candidates ${SRC}/tests/data/tiny_mix.pt --probe)
expect_match("${OUT}" "[1-9][0-9]* candidates retained")
expect_match("${OUT}" "probe: [1-9][0-9]* of [0-9]+ retained candidates are legal mutants")
