# Which sources reach LibTorch through their includes. The shared precompiled header holds
# <torch/torch.h> and costs about 10 s to load per file (570 MB), five times a torch-free file's
# whole compile; so a file that never includes LibTorch is compiled without it. Project headers
# ("core/x.h" from the project root or tests/, or relative to the including file) are followed;
# anything else is a leaf. The answer is taken at configure time: a file that gains a LibTorch
# include later still compiles (LibTorch is on every target's include path), only without the
# precompiled header, until the next configure. A wrong answer costs build time, never
# correctness. Sources added to a target after triax_use_pch keep the header.

# triax_reaches_torch(FILE OUT): OUT is TRUE when FILE or a project header it includes, at any
# depth, includes a torch/, ATen/, c10/ or caffe2/ header.
function(triax_reaches_torch file out)
  get_property(known GLOBAL PROPERTY "triax_torch:${file}" SET)
  if(known)
    get_property(answer GLOBAL PROPERTY "triax_torch:${file}")
    set(${out} ${answer} PARENT_SCOPE)
    return()
  endif()
  # Provisional answer while this file is being read: an include cycle ends here.
  set_property(GLOBAL PROPERTY "triax_torch:${file}" FALSE)
  set(answer FALSE)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(dir "${file}" DIRECTORY)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" name "${line}")
    if(name MATCHES "^(torch|ATen|c10|caffe2)/")
      set(answer TRUE)
      break()
    endif()
    foreach(candidate "${PROJECT_SOURCE_DIR}/${name}" "${PROJECT_SOURCE_DIR}/tests/${name}"
                      "${dir}/${name}")
      if(EXISTS "${candidate}" AND NOT IS_DIRECTORY "${candidate}")
        get_filename_component(candidate "${candidate}" REALPATH)
        triax_reaches_torch("${candidate}" included)
        if(included)
          set(answer TRUE)
        endif()
        break()
      endif()
    endforeach()
    if(answer)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "triax_torch:${file}" ${answer})
  set(${out} ${answer} PARENT_SCOPE)
endfunction()

# triax_use_pch(TARGET): the shared precompiled header for TARGET's sources that reach LibTorch.
function(triax_use_pch target)
  target_precompile_headers(${target} REUSE_FROM triax_pch)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    # A generated source may not exist yet at configure time: it keeps the header.
    if(path MATCHES "\\.(cpp|cc|cxx)$" AND EXISTS "${path}")
      get_filename_component(path "${path}" REALPATH)
      triax_reaches_torch("${path}" torch)
      if(NOT torch)
        set_source_files_properties("${path}" TARGET_DIRECTORY ${target}
                                    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endif()
  endforeach()
endfunction()
