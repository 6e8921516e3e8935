# XGrammar's C++ core, the grammar engine of structured output (src/grammar, docs/design.md
# "Structured output"). scripts/build_xgrammar.sh builds it once from its PyPI source distribution
# into the ignored cache .xgrammar/ (a no-op once built), here at configure time so that
# `make build` and .ci/run on a fresh clone get it with no manual step. When it cannot be fetched
# or built, lazyattn builds without it and refuses constraint fields with a 400 saying why.
option(LAZYATTN_XGRAMMAR "Structured output with XGrammar (built from its PyPI sdist)" ON)
if(LAZYATTN_XGRAMMAR)
  execute_process(COMMAND ${CMAKE_SOURCE_DIR}/scripts/build_xgrammar.sh
                  RESULT_VARIABLE xgrammar_rc OUTPUT_VARIABLE xgrammar_prefix
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(xgrammar_rc EQUAL 0 AND EXISTS "${xgrammar_prefix}/lib/libxgrammar.a")
    add_library(lazyattn_xgrammar STATIC IMPORTED GLOBAL)
    set_target_properties(lazyattn_xgrammar PROPERTIES
      IMPORTED_LOCATION "${xgrammar_prefix}/lib/libxgrammar.a"
      INTERFACE_INCLUDE_DIRECTORIES "${xgrammar_prefix}/include"
      INTERFACE_COMPILE_DEFINITIONS "XGRAMMAR_ENABLE_CPPTRACE=0;XGRAMMAR_ENABLE_INTERNAL_CHECK=0"
      INTERFACE_LINK_LIBRARIES Threads::Threads)
    message(STATUS "XGrammar: ${xgrammar_prefix} (structured output on)")
  else()
    message(WARNING "XGrammar could not be fetched or built (scripts/build_xgrammar.sh exit ${xgrammar_rc}): "
                    "lazyattn builds without structured output; constraint fields are refused with a 400")
  endif()
endif()
