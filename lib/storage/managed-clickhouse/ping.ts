// Whether a ClickHouse answers `GET /ping` with `Ok.`: how the managed ClickHouse
// (supervisor.ts) and the local cluster's servers (scripts/cluster/cluster-clickhouse.ts) tell that a
// server they started is up.
import { get } from 'node:http'

/** True once `url`/ping answers `Ok.` within 1 s; false on any error, other answer or timeout. */
export function answersPing (url: string): Promise<boolean> {
  return new Promise((done) => {
    // No keep-alive: ClickHouse holds its shutdown for seconds while an idle connection is open.
    const req = get(`${url}/ping`, { agent: false, timeout: 1_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk })
        .on('end', () => done(body === 'Ok.\n')).on('error', () => done(false))
    })
    req.on('timeout', () => req.destroy()).on('error', () => done(false))
  })
}
