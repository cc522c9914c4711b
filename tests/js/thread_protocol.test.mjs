// The thread-centric protocol @langchain/react's useStream speaks (POST
// /threads/{t}/commands, /threads/{t}/stream/events over SSE and over a WebSocket), driven
// through the SDK's StreamController, which useStream wraps, against LANGGRAPH_URL. The
// graph is tests/support/hook_graphs.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, ProtocolWebSocketTransportAdapter } from "@langchain/langgraph-sdk";
import { StreamController } from "@langchain/langgraph-sdk/stream";

const URL_ = process.env.LANGGRAPH_URL;
const KEY = process.env.LANGGRAPH_API_KEY || undefined;
const ASSISTANT = process.env.LANGGRAPH_ASSISTANT || "hooks";
const HEADERS = { "content-type": "application/json", ...(KEY ? { "x-api-key": KEY } : {}) };
const client = new Client({ apiUrl: URL_, apiKey: KEY });

const say = (text) => ({ messages: [{ type: "human", content: text }] });
const texts = (snapshot) => snapshot.messages.map((m) => m.text);
// a message's text, its content a string or (the reference's streamed messages) blocks
const plain = (content) =>
  typeof content === "string" ? content : content.map((b) => b.text ?? "").join("");

/** A controller as useStream makes one, its every root snapshot kept. */
function controlled(options = {}) {
  const controller = new StreamController({ assistantId: ASSISTANT, client, threadId: null, ...options });
  const snapshots = [];
  controller.rootStore.subscribe(() => snapshots.push(controller.rootStore.getSnapshot()));
  controller.activate();
  return { controller, snapshots, now: () => controller.rootStore.getSnapshot() };
}

/** A WebSocket transport (with the API key, which a browser's WebSocket cannot send). */
function socketTransport() {
  return new ProtocolWebSocketTransportAdapter({
    apiUrl: URL_,
    webSocketFactory: (url) => new WebSocket(url, KEY ? { headers: { "x-api-key": KEY } } : undefined),
  });
}

async function until(check, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function command(threadId, body) {
  const reply = await fetch(`${URL_}/threads/${threadId}/commands`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: await reply.json() };
}

/** The events of POST /threads/{t}/stream/events, until `done` says so. */
async function events(threadId, request, done) {
  const abort = new AbortController();
  const reply = await fetch(`${URL_}/threads/${threadId}/stream/events`, {
    method: "POST",
    headers: { ...HEADERS, accept: "text/event-stream" },
    body: JSON.stringify(request),
    signal: abort.signal,
  });
  assert.equal(reply.status, 200);
  const got = [];
  let buffer = "";
  const decoder = new TextDecoder();
  try {
    for await (const bytes of reply.body) {
      buffer += decoder.decode(bytes, { stream: true }).replaceAll("\r\n", "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5));
        if (data.length) got.push(JSON.parse(data.join("\n")));
      }
      if (done(got)) break;
    }
  } finally {
    abort.abort();
  }
  return got;
}

const ended = (event) => event.method === "lifecycle" && ["completed", "interrupted", "failed"].includes(event.params.data.event);

for (const [transport, options] of [
  ["SSE", () => ({})],
  ["WebSocket", () => ({ transport: socketTransport() })],
]) {
  test(`run.start over ${transport}: the controller shows the answer and the tool call`, async () => {
    const { controller, now } = controlled(options());
    try {
      await controller.submit(say("tool cats"));
      await until(() => texts(now()).at(-1) === "the tool says cats is known" && !now().isLoading, "the answer");
      assert.equal(texts(now())[0], "tool cats");
      const call = now().messages.find((m) => m.tool_calls?.length)?.tool_calls[0];
      assert.deepEqual([call?.name, call?.args], ["lookup", { topic: "cats" }]);
    } finally {
      await controller.dispose();
    }
  });

  test(`input.respond over ${transport} answers the interrupt the stream showed`, async () => {
    const { controller, now } = controlled(options());
    try {
      await controller.submit(say("ok?"));
      await until(() => now().interrupts.length === 1, "the interrupt");
      assert.deepEqual(now().interrupts[0].value, { question: "ok?" });
      await controller.respond("yes");
      await until(() => texts(now()).at(-1) === "a person says yes", "the answer");
      await until(() => now().interrupts.length === 0 && !now().isLoading, "the end");
    } finally {
      await controller.dispose();
    }
  });
}

test("the answer grows token by token before its step ends", async () => {
  const { controller, snapshots, now } = controlled();
  try {
    await controller.submit(say("slow growth"));
    await until(() => /word119$/.test(texts(now()).at(-1) ?? "") && !now().isLoading, "the answer", 60000);
    const answer = texts(now()).at(-1);
    const partial = snapshots.map((s) => texts(s).at(-1)).filter(
      (t) => typeof t === "string" && t.startsWith("word0") && t.length < answer.length,
    );
    assert.ok(partial.length >= 10, `the answer showed in part ${partial.length} times`);
  } finally {
    await controller.dispose();
  }
});

test("a regenerate (run.start forking from a checkpoint) answers again from there", async () => {
  const { controller, now } = controlled();
  try {
    await controller.submit(say("hello"));
    await until(() => texts(now()).length === 2 && !now().isLoading, "the answer");
    const history = await client.threads.getHistory(now().threadId, { limit: 10 });
    const before = history.find((s) => s.next.includes("model"));
    await controller.submit(null, { forkFrom: before.checkpoint.checkpoint_id });
    await until(() => !now().isLoading, "the second answer");
    const [head] = await client.threads.getHistory(now().threadId, { limit: 1 });
    assert.notEqual(head.checkpoint.checkpoint_id, history[0].checkpoint.checkpoint_id);
    assert.deepEqual(head.values.messages.map((m) => plain(m.content)), [
      "hello",
      "echo hello from the word model",
    ]);
    assert.deepEqual(texts(now()), ["hello", "echo hello from the word model"]);
  } finally {
    await controller.dispose();
  }
});

test("a thread's state hydrates a new controller", async () => {
  const first = controlled();
  let threadId;
  try {
    await first.controller.submit(say("hello"));
    await until(() => texts(first.now()).length === 2 && !first.now().isLoading, "the answer");
    threadId = first.now().threadId;
  } finally {
    await first.controller.dispose();
  }
  const second = controlled({ threadId });
  try {
    await second.controller.hydrate(threadId);
    await until(() => texts(second.now()).length === 2, "the hydrated messages");
    assert.deepEqual(texts(second.now()), ["hello", "echo hello from the word model"]);
  } finally {
    await second.controller.dispose();
  }
});

test("the event stream filters by channel and replays after `since`", async () => {
  const threadId = crypto.randomUUID();
  const started = await command(threadId, {
    id: 1,
    method: "run.start",
    params: { assistant_id: ASSISTANT, input: say("hello") },
  });
  assert.equal(started.body.type, "success");
  assert.ok(started.body.result.run_id);
  const all = await events(threadId, { channels: ["lifecycle", "values"] }, (got) => got.some(ended));
  assert.ok(all.every((e) => ["lifecycle", "values"].includes(e.method)));
  assert.deepEqual(all.at(-1).params.data.event, "completed");
  assert.ok(all.every((e, n) => n === 0 || e.seq > all[n - 1].seq), "seq does not grow");
  const since = all[1].seq;
  const later = await events(threadId, { channels: ["lifecycle", "values"], since }, (got) => got.some(ended));
  assert.deepEqual(later.map((e) => e.event_id), all.slice(2).map((e) => e.event_id));
});

test("commands the server does not know, or malformed, are refused as the protocol says", async () => {
  const threadId = crypto.randomUUID();
  const unknown = await command(threadId, { id: 7, method: "no.such", params: {} });
  assert.deepEqual([unknown.body.type, unknown.body.id, unknown.body.error], ["error", 7, "unknown_command"]);
  const malformed = await command(threadId, { method: "run.start", params: {} });
  assert.equal(malformed.status, 400);
  assert.deepEqual([malformed.body.type, malformed.body.error], ["error", "invalid_argument"]);
  const nameless = await command(threadId, { id: 8, method: "run.start", params: { input: null } });
  assert.deepEqual([nameless.body.type, nameless.body.error], ["error", "invalid_argument"]);
  const stream = await fetch(`${URL_}/threads/${threadId}/stream/events`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ channels: ["debug"] }),
  });
  assert.equal(stream.status, 400);
});

test("input.respond names an interrupt the thread waits on, or is refused", async () => {
  const threadId = crypto.randomUUID();
  await command(threadId, { id: 1, method: "run.start", params: { assistant_id: ASSISTANT, input: say("sure?") } });
  const asked = await events(threadId, { channels: ["input", "lifecycle"] }, (got) => got.some(ended));
  const requested = asked.find((e) => e.method === "input.requested");
  assert.deepEqual(requested.params.data.payload, { question: "sure?" });
  const wrong = await command(threadId, {
    id: 2,
    method: "input.respond",
    params: { namespace: [], interrupt_id: "no-such-interrupt", response: "yes" },
  });
  assert.deepEqual([wrong.body.type, wrong.body.error], ["error", "no_such_interrupt"]);
  const right = await command(threadId, {
    id: 3,
    method: "input.respond",
    params: { namespace: [], interrupt_id: requested.params.data.interrupt_id, response: "yes" },
  });
  assert.equal(right.body.type, "success");
  const done = await events(threadId, { channels: ["values", "lifecycle"] }, (got) =>
    got.some((e) => e.method === "values" && e.params.data.messages?.length === 2),
  );
  assert.deepEqual(done.filter((e) => e.method === "values").at(-1).params.data.messages.map((m) => m.content), [
    "sure?",
    "a person says yes",
  ]);
});
