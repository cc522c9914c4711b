// Every call @langchain/langgraph-sdk's useStream (react/stream.lgp.js) makes, made from
// node against the server at LANGGRAPH_URL, its events fed through the hook's own
// StreamManager and MessageTupleManager. The graph is tests/support/hook_graphs.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "@langchain/langgraph-sdk";
import { MessageTupleManager, StreamManager } from "@langchain/langgraph-sdk/ui";

const client = new Client({
  apiUrl: process.env.LANGGRAPH_URL,
  apiKey: process.env.LANGGRAPH_API_KEY || undefined,
});
const ASSISTANT = process.env.LANGGRAPH_ASSISTANT || "hooks";
// what useStream asks for when its callbacks are set (onUpdateEvent, onCustomEvent, ...);
// onToolEvent adds "tools", which the reference serves on the thread protocol only
const EVERY_MODE = [
  "values",
  "updates",
  "messages-tuple",
  "custom",
  "events",
  "debug",
  "checkpoints",
  "tasks",
];

const say = (text) => ({ messages: [{ type: "human", content: text }] });
const texts = (values) => (values?.messages ?? []).map((m) => m.content);
const mode = (event) => event.split("|")[0];

/** A run streamed as useStream streams it: through its StreamManager, every snapshot of
 * its values kept, every callback counted. */
async function streamed(threadId, payload) {
  const manager = new StreamManager(new MessageTupleManager(), { throttle: false });
  const snapshots = [];
  manager.subscribe(() => snapshots.push(manager.values));
  const seen = {};
  const count = (name) => (data) => {
    (seen[name] ??= []).push(data);
  };
  let created;
  let failure;
  await manager.start(
    async (signal) =>
      client.runs.stream(threadId, ASSISTANT, {
        ...payload,
        signal,
        onRunCreated: (meta) => {
          created = meta;
        },
      }),
    {
      getMessages: (values) => values.messages ?? [],
      setMessages: (values, messages) => ({ ...values, messages }),
      initialValues: {},
      callbacks: {
        onUpdateEvent: count("updates"),
        onCustomEvent: count("custom"),
        onLangChainEvent: count("events"),
        onDebugEvent: count("debug"),
        onCheckpointEvent: count("checkpoints"),
        onTaskEvent: count("tasks"),
        onToolEvent: count("tools"),
        onMetadataEvent: count("metadata"),
      },
      onError: (error) => {
        failure = error;
      },
    },
  );
  assert.equal(failure, undefined, `the stream failed: ${failure}`);
  return { values: manager.values, snapshots, seen, created };
}

/** The AI answer the hook's MessageTupleManager assembles from a run's messages events. */
function assembled(chunks) {
  const manager = new MessageTupleManager();
  let id;
  for (const { event, data } of chunks) {
    if (mode(event) !== "messages") continue;
    const [message, metadata] = data;
    if (!/^ai/i.test(message.type)) continue;
    id = manager.add(structuredClone(message), metadata);
  }
  const chunk = manager.get(id)?.chunk;
  return chunk === undefined ? undefined : chunk.content;
}

async function newThread() {
  return (await client.threads.create()).thread_id;
}

test("runs.stream with every stream mode, subgraphs, resumable, continue on disconnect", async () => {
  const threadId = await newThread();
  const run = await streamed(threadId, {
    input: say("tool cats"),
    streamMode: EVERY_MODE,
    streamSubgraphs: true,
    streamResumable: true,
    onDisconnect: "continue",
  });
  assert.deepEqual(texts(run.values).slice(-1), ["the tool says cats is known"]);
  for (const name of ["updates", "custom", "events", "debug", "checkpoints", "tasks"]) {
    assert.ok(run.seen[name]?.length, `no ${name} event`);
  }
  assert.ok(run.seen.custom.some((data) => data.progress === "answering"));
  assert.ok(run.created?.run_id, "no run id in Content-Location");
  // the hook shows the answer growing: a snapshot holds a part of it
  const partial = run.snapshots.map((v) => texts(v).at(-1)).filter(
    (t) => typeof t === "string" && t.length && t !== "the tool says cats is known" &&
      "the tool says cats is known".startsWith(t),
  );
  assert.ok(partial.length > 0, "the answer never showed in part");
});

test("runs.joinStream with Last-Event-ID sends what was missed, once", async () => {
  const threadId = await newThread();
  const streamMode = ["values", "updates", "messages-tuple"];
  const abort = new AbortController();
  let runId;
  const first = [];
  try {
    for await (const chunk of client.runs.stream(threadId, ASSISTANT, {
      input: say("slow words"),
      streamMode,
      streamResumable: true,
      onDisconnect: "continue",
      signal: abort.signal,
      onRunCreated: (meta) => {
        runId = meta.run_id;
      },
    })) {
      first.push(chunk);
      if (first.filter((c) => mode(c.event) === "messages").length >= 3) abort.abort();
    }
  } catch (error) {
    if (error.name !== "AbortError") throw error;
  }
  const lastId = first.at(-1).id;
  assert.ok(lastId, "events carry no id");
  const rest = [];
  for await (const chunk of client.runs.joinStream(threadId, runId, {
    lastEventId: lastId,
    streamMode,
  })) {
    rest.push(chunk);
  }
  const replayed = [];
  for await (const chunk of client.runs.joinStream(threadId, runId, {
    lastEventId: "-1",
    streamMode,
  })) {
    replayed.push(chunk);
  }
  assert.ok(!rest.some((c) => c.id === lastId), "the last event seen came again");
  // a token missed or doubled shows in the answer the hook assembles
  const answer = texts((await client.threads.getState(threadId)).values).at(-1);
  assert.equal(assembled([...first, ...rest]), answer);
  assert.equal(assembled(replayed), answer);
  const state = await client.threads.getState(threadId);
  assert.match(texts(state.values).at(-1), /^word0 word1 .* word119$/);
});

test("stream mode tools (onToolEvent) is refused on a run's stream, as the reference does", async () => {
  const threadId = await newThread();
  await assert.rejects(
    async () => {
      for await (const chunk of client.runs.stream(threadId, ASSISTANT, {
        input: say("hi"),
        streamMode: ["values", "tools"],
      })) {
        assert.fail(`an event came: ${chunk.event}`);
      }
    },
    (error) => error.status === 422,
  );
});

test("threads.getHistory gives the thread's checkpoints, newest first", async () => {
  const threadId = await newThread();
  await streamed(threadId, { input: say("hello"), streamMode: ["values"] });
  const history = await client.threads.getHistory(threadId, { limit: 10 });
  assert.ok(history.length >= 2);
  assert.deepEqual(texts(history[0].values), ["hello", "echo hello from the word model"]);
  assert.deepEqual(history[0].next, []);
  assert.equal(history[0].parent_checkpoint.checkpoint_id, history[1].checkpoint.checkpoint_id);
});

test("a resume (command: {resume}) answers the interrupt the hook showed", async () => {
  const threadId = await newThread();
  const asked = await streamed(threadId, { input: say("ok?"), streamMode: ["values", "updates"] });
  const [pending] = asked.values.__interrupt__ ?? [];
  assert.deepEqual(pending?.value, { question: "ok?" });
  const answered = await streamed(threadId, {
    command: { resume: "yes" },
    streamMode: ["values", "updates"],
  });
  assert.deepEqual(texts(answered.values), ["ok?", "a person says yes"]);
  assert.equal(answered.values.__interrupt__, undefined);
});

test("a regenerate (checkpoint on a run) answers again from that checkpoint", async () => {
  const threadId = await newThread();
  await streamed(threadId, { input: say("hello"), streamMode: ["values"] });
  const history = await client.threads.getHistory(threadId, { limit: 10 });
  const before = history.find((s) => s.next.includes("model"));
  assert.ok(before, "no checkpoint before the model's answer");
  const again = await streamed(threadId, {
    input: undefined,
    checkpoint: before.checkpoint,
    streamMode: ["values"],
  });
  assert.deepEqual(texts(again.values), ["hello", "echo hello from the word model"]);
  const [head] = await client.threads.getHistory(threadId, { limit: 1 });
  assert.deepEqual(texts(head.values), ["hello", "echo hello from the word model"]);
  assert.notEqual(head.checkpoint.checkpoint_id, history[0].checkpoint.checkpoint_id);
});

test("a cancel (the hook's stop) ends the run before its answer", async () => {
  const threadId = await newThread();
  const run = await client.runs.create(threadId, ASSISTANT, {
    input: say("slow cancel"),
    streamMode: ["messages-tuple", "values"],
  });
  for await (const chunk of client.runs.joinStream(threadId, run.run_id, {
    streamMode: ["messages-tuple", "values"],
  })) {
    if (mode(chunk.event) === "messages" || texts(chunk.data).length > 1) break;
  }
  await client.runs.cancel(threadId, run.run_id);
  await client.runs.join(threadId, run.run_id);
  const ended = await client.runs.get(threadId, run.run_id);
  assert.equal(ended.status, "interrupted");
  const state = await client.threads.getState(threadId);
  assert.deepEqual(texts(state.values), ["slow cancel"]);
});

test("onDisconnect cancel: a stream the client leaves cancels its run", async () => {
  const threadId = await newThread();
  const abort = new AbortController();
  let runId;
  try {
    for await (const chunk of client.runs.stream(threadId, ASSISTANT, {
      input: say("slow leave"),
      streamMode: ["messages-tuple"],
      onDisconnect: "cancel",
      signal: abort.signal,
      onRunCreated: (meta) => {
        runId = meta.run_id;
      },
    })) {
      if (mode(chunk.event) === "messages") abort.abort();
    }
  } catch (error) {
    if (error.name !== "AbortError") throw error;
  }
  await client.runs.join(threadId, runId);
  const ended = await client.runs.get(threadId, runId);
  assert.equal(ended.status, "interrupted");
});
