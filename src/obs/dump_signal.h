// SIGUSR1 dumps the flight recorder of every live communicator in the
// process. The handler only writes a byte to a pipe (async-signal-safe); a
// thread waiting on the pipe does the dumping. Installed at the first
// communicator init unless STRATA_FLIGHT_RECORDER_SIGNAL=0 or the
// application already handles SIGUSR1. A process forked from one that had
// installed it (a launcher that used strata, then forked its workers)
// inherits the handler but not the thread: its first init gives it a pipe
// and a thread of its own.
#pragma once

namespace strata {

// `dumpAll` runs on the dump thread, once per signal.
void installDumpSignal(void (*dumpAll)());

}  // namespace strata
