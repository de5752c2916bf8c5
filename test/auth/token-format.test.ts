import t from 'tap'
import { crc32 } from 'node:zlib'
import { checksumOf, displayToken, generateToken, hashToken, hashesEqual, parseToken, tokenLength } from '../../lib/auth/token-format.ts'

t.test('generated tokens have the documented shape and a valid checksum', async (t) => {
  for (const kind of ['pat', 'ingest'] as const) {
    const token = generateToken(kind)
    t.equal(token.length, tokenLength)
    t.equal(token.length, 40)
    t.match(token, kind === 'pat' ? /^slp_[0-9A-Za-z]{36}$/ : /^sli_[0-9A-Za-z]{36}$/)
    t.equal(parseToken(token), kind)
  }
})

t.test('checksum is CRC-32 of the 30 random characters in base62, big-endian, 6 wide', async (t) => {
  const body = 'abcdefghijklmnopqrstuvwxyz0123'
  let n = crc32(Buffer.from(body))
  let expected = ''
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
  while (n > 0) { expected = alphabet[n % 62] + expected; n = Math.floor(n / 62) }
  t.equal(checksumOf(body), expected.padStart(6, '0'))
  t.equal(parseToken('slp_' + body + checksumOf(body)), 'pat')
})

t.test('a changed character or a bad shape is rejected without lookup', async (t) => {
  const token = generateToken('pat')
  const flipped = token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11)
  t.equal(parseToken(flipped), null)
  t.equal(parseToken(token.slice(0, -1)), null)
  t.equal(parseToken('slx_' + token.slice(4)), null)
  t.equal(parseToken(''), null)
})

t.test('hashing, comparison and display', async (t) => {
  const token = generateToken('ingest')
  const h = hashToken(token)
  t.match(h, /^[0-9a-f]{64}$/)
  t.ok(hashesEqual(h, hashToken(token)))
  t.notOk(hashesEqual(h, hashToken(generateToken('ingest'))))
  t.equal(displayToken(token), token.slice(0, 8) + '…' + token.slice(-4))
  t.notOk(displayToken(token).includes(token.slice(8, 36)))
})
