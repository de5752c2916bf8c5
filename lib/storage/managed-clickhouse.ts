// A local ClickHouse that Sluice starts and supervises when CLICKHOUSE_URL is not set.
//
// Contract:
// - startManagedClickHouse() resolves only once the server answers `GET /ping` with `Ok.`; it
//   rejects with MissingClickHouseError when no binary is found, and otherwise with an error that
//   quotes the tail of the server's logs when the server exits or stays silent past startTimeoutMs.
// - The server listens on 127.0.0.1 only, on ports picked free at start; `url` never changes for
//   the life of the object, restarts included.
// - An unexpected exit is logged and followed by a restart after a backoff (250 ms doubling to
//   30 s, reset after 60 s of health); 'crash' is emitted at the exit, 'restart' once the new
//   process answers. With `restart: false` only 'crash' is emitted.
// - stop() sends SIGTERM, SIGKILLs after stopTimeoutMs, and resolves when the process is gone.
//   If Node exits without stop(), the 'exit' hook SIGKILLs the server synchronously. If Node is
//   SIGKILLed itself nothing can run, so the next start on the same data dir kills the leftover
//   server (found by pid file or ClickHouse's `status` file, checked to be ours by command line),
//   unless the Sluice that started it still runs: then starting fails and nothing is killed.
// - Callers close their keep-alive connections before stop(): ClickHouse holds its shutdown for
//   seconds while an idle connection stays open.
//
// The jobs live in managed-clickhouse/: binary.ts (finding the server binary), server-config.ts
// (ports and config.xml), leftovers.ts (stopping a server a dead Sluice left running),
// supervisor.ts (start, health, restart with backoff, stop), ping.ts (is it up), log-tail.ts (a
// file's last bytes, for errors). This file is their public face.
export { MissingClickHouseError, findClickHouseBinary } from './managed-clickhouse/binary.ts'
export type { ClickHouseCommand } from './managed-clickhouse/binary.ts'
export { writeClickHouseConfig } from './managed-clickhouse/server-config.ts'
export type { ClickHousePorts } from './managed-clickhouse/server-config.ts'
export { terminateClickHouse } from './managed-clickhouse/leftovers.ts'
export { answersPing } from './managed-clickhouse/ping.ts'
export { tailOf } from './managed-clickhouse/log-tail.ts'
export { ManagedClickHouse, startManagedClickHouse } from './managed-clickhouse/supervisor.ts'
export type { ManagedClickHouseEvents, ManagedClickHouseOptions } from './managed-clickhouse/supervisor.ts'
