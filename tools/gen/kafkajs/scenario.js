// The kafkajs scenario of tools/gen (kafka-analyzer's capture generator).
//
// Reads a JSON spec on stdin (bootstrap, topic, group, client id, codec, the records to produce),
// produces the records in one send() (acks=-1, each to the partition the spec names), then reads
// them back with a consumer group (JoinGroup/SyncGroup/Heartbeat), commits and disconnects
// (LeaveGroup). Prints one JSON line per produced or consumed record (partition, offset,
// timestamp) and "note" lines for anything unexpected; tools/gen/kafkajs.py turns them into the
// manifest. Installed with `npm ci` from the committed package-lock.json.
'use strict'

const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const LINGER_MS = 1600 // heartbeats after the last record, as the other scenarios

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

function note(text) {
  emit({ kind: 'note', text })
}

function text(buf) {
  return buf === null || buf === undefined ? null : buf.toString('utf8')
}

const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
}

async function readStdin() {
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

async function produce(kafka, spec) {
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = spec.records.map(r => ({
    partition: r.partition,
    key: r.key,
    value: r.value,
    headers: Object.fromEntries(r.headers || []),
    timestamp: String(r.timestamp),
  }))
  let meta = []
  let error = null
  try {
    meta = await producer.send({
      topic: spec.topic,
      acks: -1,
      timeout: 5000,
      compression: CODECS[spec.codec],
      messages,
    })
  } catch (e) {
    error = e
    note(`kafkajs send: ${e.message}`)
  }
  // one batch per partition: a record's offset is its partition's base offset plus its place
  const base = new Map(meta.map(m => [m.partition, BigInt(m.baseOffset)]))
  const seen = new Map()
  for (const r of spec.records) {
    const nth = seen.get(r.partition) || 0n
    seen.set(r.partition, nth + 1n)
    const ev = {
      kind: 'produced',
      topic: spec.topic,
      partition: r.partition,
      offset: base.has(r.partition) ? Number(base.get(r.partition) + nth) : null,
      key: r.key,
      value: r.value,
      headers: r.headers || [],
      timestamp: r.timestamp,
    }
    if (error) ev.error = error.name
    emit(ev)
  }
  await producer.disconnect()
  return error ? 0 : spec.records.length
}

async function consume(kafka, spec, want, deadline) {
  const consumer = kafka.consumer({
    groupId: spec.group,
    sessionTimeout: 6000,
    rebalanceTimeout: 6000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 300,
    allowAutoTopicCreation: false,
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [spec.topic], fromBeginning: true })
  let got = 0
  let resolveDone
  const done = new Promise(resolve => { resolveDone = resolve })
  const last = new Map() // partition -> next offset to commit
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      got += 1
      emit({
        kind: 'consumed',
        topic,
        partition,
        offset: Number(message.offset),
        key: text(message.key),
        value: text(message.value),
        headers: Object.entries(message.headers || {}).map(([k, v]) => [k, text(v)]),
        timestamp: Number(message.timestamp),
      })
      last.set(partition, (BigInt(message.offset) + 1n).toString())
      if (got >= want) resolveDone(true)
    },
  })
  const timer = setTimeout(() => resolveDone(false), Math.max(0, deadline - Date.now()))
  await done
  clearTimeout(timer)
  if (got < want) note(`consumer got ${got} of ${want} records`)
  if (got) {
    await new Promise(resolve => setTimeout(resolve, LINGER_MS))
    await consumer.commitOffsets(
      [...last].map(([partition, offset]) => ({ topic: spec.topic, partition, offset })),
    )
  }
  await consumer.disconnect()
}

async function main() {
  const spec = await readStdin()
  if (!(spec.codec in CODECS)) {
    process.stderr.write(`unknown codec ${spec.codec} (kafkajs has ${Object.keys(CODECS)} built in)\n`)
    process.exit(2)
  }
  const deadline = Date.now() + spec.timeout_ms
  const kafka = new Kafka({
    clientId: spec.client_id,
    brokers: spec.bootstrap.split(','),
    logLevel: logLevel.WARN,
    // stdout carries the JSON lines: kafkajs' own log goes to stderr (the generator's log)
    logCreator: () => ({ namespace, level, label, log }) =>
      process.stderr.write(`${label} ${namespace}: ${log.message} ${JSON.stringify(log)}\n`),
    retry: { retries: 3 },
  })
  const n = await produce(kafka, spec)
  if (n) await consume(kafka, spec, n, deadline)
}

main().then(
  () => process.exit(0),
  e => {
    note(`kafkajs raised ${e.name}: ${e.message}`)
    process.exit(1)
  },
)
