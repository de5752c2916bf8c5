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

/**
 * Whether a stream found earlier is still the one the store holds under its name: false once it
 * is deleted, or deleted and made again (a refresh or a PATCH replaces the record, with the same
 * creation time). For what runs on after the lookup: a tail, an export.
 */
export function isCurrentStream (store: MetadataStore, stream: StreamRecord): boolean {
  return store.stream(stream.orgId, stream.name)?.createdAt === stream.createdAt
}
