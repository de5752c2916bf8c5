// The streams domain, for every route that names a stream in its path: looking one up in the
// caller's org. Routes of other folders (ingest, live, query) import this, not a route file.
import { SluiceError } from '../errors.ts'
import type { MetadataStore, StreamRecord } from '../storage/metadata-store.ts'

/** The stream named in the path, in the caller's org, or 404 (other orgs' streams included). */
export function findStream (store: MetadataStore, orgId: string, name: string | undefined): StreamRecord {
  const stream = name === undefined ? undefined : store.stream(orgId, name)
  if (!stream) throw new SluiceError('not_found', `No stream named ${JSON.stringify(name)} in this org`)
  return stream
}
