// defines: TRIAX_MPI_CHECK, triax::throw_mpi_error
//
// Every MPI call goes through TRIAX_MPI_CHECK, which names the call, the rank and MPI's own
// error string. Communicators use MPI_ERRORS_RETURN so failures arrive here instead of aborting.
#pragma once

#include <mpi.h>

namespace triax {

[[noreturn]] void throw_mpi_error(const char* call, int code, const char* file, int line);

}  // namespace triax

#define TRIAX_MPI_CHECK(call)                                             \
  do {                                                                    \
    const int triax_mpi_rc_ = (call);                                     \
    if (triax_mpi_rc_ != MPI_SUCCESS) {                                   \
      ::triax::throw_mpi_error(#call, triax_mpi_rc_, __FILE__, __LINE__); \
    }                                                                     \
  } while (false)
