// Thread-local variables read on every call of the C API (the group depth,
// the communicator validated last). In a shared library a thread_local is
// reached through __tls_get_addr, a call per access; the initial-exec model
// makes it one load at a fixed offset from the thread pointer. That takes
// space in the static TLS block, which glibc reserves a surplus of for
// libraries loaded later with dlopen (PyTorch's plugin loads strata that
// way), so it is kept to a few plain words: nothing with a constructor.
#pragma once

#if defined(__GNUC__) && defined(__ELF__)
#define STRATA_HOT_TLS thread_local __attribute__((tls_model("initial-exec")))
#else
#define STRATA_HOT_TLS thread_local
#endif
