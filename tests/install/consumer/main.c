/* A user program built against an installed strata (find_package or pkg-config). */
#include <stdio.h>
#include <strata/strata.h>

int main(void) {
  strataUniqueId id;
  strataComm_t comm;
  float in[3] = {1.5f, 2.5f, -4.0f}, out[3] = {0};
  if (strataGetUniqueId(&id) || strataCommInitRank(&comm, 1, id, 0)) {
    fprintf(stderr, "init: %s\n", strataGetLastError(NULL));
    return 1;
  }
  strataResult_t rc = strataAllReduce(in, out, 3, strataFloat32, strataSum, comm, NULL);
  strataCommDestroy(comm);
  if (rc != strataSuccess || out[0] != 1.5f || out[2] != -4.0f) {
    fprintf(stderr, "allreduce: %s\n", strataGetErrorString(rc));
    return 1;
  }
  printf("consumer ok\n");
  return 0;
}
