#include "parallel/comm/mpi_check.h"

#include <string>

#include "core/error.h"

namespace triax {

void throw_mpi_error(const char* call, int code, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof(text), "MPI error code %d", code);
  }
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string name(call, std::string(call).find('('));
  throw Error(str(name, " failed on world rank ", rank, ": ", text, " [", file, ":", line, "]"));
}

}  // namespace triax
