# Warnings for moacert's own targets only: third-party headers come in as
# SYSTEM includes so that their warnings never reach us.
add_library(moacert_warnings INTERFACE)
target_compile_options(moacert_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wno-missing-field-initializers>)
if(MOACERT_WERROR)
  target_compile_options(moacert_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX,C>:-Werror>)
endif()
