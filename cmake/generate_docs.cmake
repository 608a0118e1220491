# Writes the man pages and completion scripts from the built programs (target docs_generated):
#   cmake -DOPPX=<oppx> -DOPPXD=<oppxd> -DOUT=<build folder> -P cmake/generate_docs.cmake
# Each file is what the program prints, so that none can drift from its --help.
foreach(dir man completions)
  file(MAKE_DIRECTORY ${OUT}/${dir})
endforeach()
function(oppx_generate output)
  execute_process(COMMAND ${ARGN} OUTPUT_FILE ${output}.new RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(REMOVE ${output}.new)
    message(FATAL_ERROR "`${ARGN}` failed (${rc}): ${err}")
  endif()
  file(RENAME ${output}.new ${output})
endfunction()
oppx_generate(${OUT}/man/oppx.1 ${OPPX} help --man)
oppx_generate(${OUT}/man/oppxd.1 ${OPPXD} --man)
oppx_generate(${OUT}/completions/oppx.bash ${OPPX} completion bash)
oppx_generate(${OUT}/completions/_oppx ${OPPX} completion zsh)
