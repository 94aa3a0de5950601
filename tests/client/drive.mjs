#!/usr/bin/env node
// Scriptable driver: runs an ACP agent subprocess and talks to it over stdio with the OFFICIAL
// ACP client (npm @agentclientprotocol/sdk 2.4.0, pinned in package.json), records every raw
// line in both directions, and prints ONE JSON object describing the run to stdout.
//
// Usage: node tests/client/drive.mjs SCRIPT.json     (or `-`/no argument: the script on stdin)
//
// Everything is bounded by timeouts; at the end the agent is always stopped: stdin closed, then
// SIGTERM and SIGKILL to its process group after grace periods. Python wrapper:
// tests/support/acp_client.py (run_client), which also validates the transcript.
//
// ------------------------------------------------------------------------------------------------
// SCRIPT FORMAT (JSON object; every key but `agent` optional)
//
//   agent: { argv: ["cmd", ...], env: {NAME: "value" | null (= unset)}, cwd: "/dir" }
//          env is added to the driver's environment; cwd defaults to the driver's cwd.
//   client: "v1" | "v1-unstable" | "v2" | "v2-unstable"   (SDK entry; default "v2")
//   capabilities: {...}    v1: sent as initialize.clientCapabilities (verbatim, so `_meta`,
//                          `subagents: {}` or any extra field goes on the wire); v2: sent as
//                          initialize.capabilities.
//   clientInfo: {name, version}       initialize: {...extra initialize params, e.g. protocolVersion}
//   cwd: "/abs/path"       cwd of session/new (default: the driver's cwd)
//   session: {...}         extra session/new params (mcpServers, _meta, ...)
//   permission: policy     how session/request_permission is answered (default "allow_once"):
//                          "allow_once" | "allow_always" | "reject_once" | "reject_always"
//                          (the option of that kind, falling back to the other allow/reject kind),
//                          "cancelled", {"optionId": "..."}, "hold" (do not answer until an
//                          answerPermission step, or answer `cancelled` when the agent sends
//                          $/cancel_request), {"delayMs": N, "then": policy}, or a list of these
//                          used one per request (the last one repeats).
//   elicitation: answer    if present, elicitation/create is answered: an object is the answer
//                          (`{action: "accept", content: {...}}`, `{action: "decline"}`...);
//                          "hold" answers `{action: "cancel"}` only when the agent sends
//                          $/cancel_request for it. Without it the client has no handler.
//   autoInitialize: true   run `initialize` first (step id "initialize");
//   autoSession: true      then `newSession` (step id "newSession", session name "main").
//   timeoutMs: 60000       bound on all steps; stepTimeoutMs: 15000 default bound of each wait;
//   shutdownGraceMs: 5000  time the agent gets to exit after stdin is closed (then SIGTERM,
//                          2 s, SIGKILL); settleMs: 50 pause after the steps before shutdown.
//   echoClientStderr: false   also copy the client library's log lines to the real stderr.
//   steps: [ {op, id?, ...}, ... ]   run in order; the first failing step ends the run.
//
// Every step may have `id` (its key in `responses`; default: its index in `steps`, as a string)
// and `session` (a session name; default: the most recently created session). Request steps
// accept `expectError: true | <code>` (the step then fails unless the agent answered an error)
// and `timeoutMs`. Values "$lastTerminal" / "$lastToolCall" / "$lastSubagent" (the last
// terminal / tool call / subagent session id the client saw), "$lastAsyncTask" (the last
// JetBrains AIR async task the agent spawned), "$sessionId" and "$session:<name>" are substituted in ids, params, patterns.
//
//   {op: "initialize", params?}                 (only needed with autoInitialize: false)
//   {op: "newSession", name?, cwd?, request?}   a further session; becomes the default session
//   {op: "loadSession" | "resumeSession", sessionId, name?, cwd?, request?, replayFrom?}
//        session/load (v1) or session/resume of a session by id (a known id re-attaches its
//        session under its name; else a new name): it becomes the default session. Updates
//        that come before the response already count as that session's.
//   {op: "forkSession", sessionId, name?, cwd?, request?}   session/fork: the new session
//   {op: "listSessions", cwd?, cursor?, allPages?: false}   session/list (following nextCursor
//        with allPages); responses[id] = {pages, sessions}
//   {op: "prompt", text | content: [ContentBlock], await?: true}
//        v1: await = wait for the PromptResponse ({stopReason}, the end of the turn);
//        v2: await = wait for the {messageId} response (insertion), NOT for idle.
//        With await: false the response is recorded when it arrives (see awaitResponse).
//   {op: "awaitResponse", step: "<id>"}          wait for a request sent by an earlier step
//   {op: "cancelRequest", step: "<id>"}          send $/cancel_request for that step's request
//   {op: "waitFor", update: "<sessionUpdate kind>", match?: {...}, count?: 1,
//        fresh?: false, after?: "<step id>", session?: name | "*", sessionId?: "..."}
//        Wait until the client has seen `count` session/update notifications of that kind whose
//        update partially matches `match`. Searches from the start of the run, or from now
//        (`fresh`), or from the end of step `after`. session "*" = any session, including child
//        sessions the driver never created (subagents). Partial match: objects match key by
//        key (extra keys are fine), arrays element-wise with equal length, "$present" /
//        "$absent" test a key's existence, other values compare strictly. With `raw: true`
//        the agent's raw session/update lines are searched instead (updates the client library
//        drops, such as JetBrains AIR's, are only there).
//   {op: "waitIdle", match?: {...}}
//        v2: wait for an idle state_update (matching `match`, e.g. {"stopReason": "end_turn",
//        "background": []}) that arrived after the session's latest prompt was inserted (its
//        user_message, once answered; else after it was sent) and after the idle a previous
//        waitIdle consumed. v1: wait for the latest prompt's response
//        (`match` is applied to the PromptResponse).
//   {op: "waitBackground", empty?: true, length?: N, contains?: {...}, absent?: {...},
//        unreported?: true}                      v2: poll ActiveSession.background
//   {op: "waitForTerminalBytes", terminalId?: "$lastTerminal", contains?: "text",
//        containsBase64?: "...", minBytes?: N}   wait for assembled terminal output
//   {op: "waitForPermission", match?: {...params pattern}, count?: 1}
//   {op: "answerPermission", policy?: "allow_once"}   answer the oldest held request
//   {op: "waitForElicitation", count?: 1}        wait for elicitation/create requests
//   {op: "setPermission", policy}
//   {op: "cancel"}                                session/cancel notification
//   {op: "cancelTerminal", terminalId?: "$lastTerminal", force?: false}
//   {op: "cancelToolCall", toolCallId?: "$lastToolCall", force?: false}
//        v2 only, through ActiveSession.cancelTerminal / cancelToolCall, which refuse (TypeError,
//        nothing sent) unless the id currently advertises capabilities.cancel; `force` sends the
//        raw terminal/cancel / tool_call/cancel request anyway (to test -32602 answers).
//        responses[id] gets {canCancel (before sending), result | error}.
//   {op: "closeSession"}                          session/close
//   {op: "request", method, params?, await?: true}   any request (params substituted)
//   {op: "notify", method, params?}               any notification
//   {op: "snapshot"}        records background, canCancelTerminal/ToolCall per id, terminal bytes
//   {op: "sleepMs", ms}     only for timing-insensitive things
//   {op: "touch", path}     creates an empty file: releases an answer the scripted model holds
//   {op: "waitForFile", path}   waits until the file exists (made by the test, e.g. once it saw a
//                          process it watches for)
//                           for a [release:PATH] marker
//
// OUTPUT (one JSON object on stdout)
//
//   ok, error?                 the run succeeded / why not (failed step, timeout, agent exit)
//   startedAtEpochMs           wall-clock time of t = 0; every `t` / time below is ms since then
//   client, protocolVersion    SDK entry; the version the agent's initialize answer chose
//   initialize                 {request, result | error}
//   agentLines, agentLineTimes     every JSON line the agent wrote (parsed), with the time it was
//                                  read; recorded until the agent exits, also during shutdown
//   agentNonJsonLines              [{t, text}] stdout lines that are not JSON
//   clientLines, clientLineTimes   every line the client wrote
//   updates       [{t, sessionId, session (name or null), update}] every session/update the
//                 client library accepted (its parsed view: unknown fields stripped), in order
//   sessions      {name: {sessionId, newSessionResponse, seenUpdates, surfacedUpdates,
//                 surfacedStops, background (v2), canCancelTerminal (v2)}}; surfacedUpdates <
//                 seenUpdates means ActiveSession.nextUpdate() missed some (e.g. updates that
//                 arrived before the session/new response)
//   responses     {stepId: {...}} per step: result | error of requests, matched updates, ...
//   steps         [{key, op, ok, error?, tStart, tEnd, updateIndexAtEnd, agentLineIndexAtEnd}]
//   promptResponses    [{step, session, t, result | error}] in settle order
//   permissionRequests [{t, sessionId, params, answer, answeredAt, forBackgroundWork (v2)}]
//   elicitations  [{t, params, answer, answeredAt, cancelledByAgent?}] every elicitation/create
//   terminals     {terminalId: base64 of the bytes assembled from terminal_update.output
//                 (replace) and terminal_output_chunk (append); v1: from the _meta
//                 terminal_output / terminal_output_delta text, appended}
//   terminalInfo  {terminalId: merged terminal_update fields + {chunks, bytes}}
//   background    the client's latest background list of the first session (null = unreported)
//   clientStderr, droppedNotifications   what the client library logged; lines matching
//                 /Error handling notification/ (a notification it rejected and dropped)
//   warnings, agentStderr, exitCode, exitSignal,
//   shutdown      {stdinClosedAt, exitedAt, exitAfterStdinCloseMs, forced?: "SIGTERM"|"SIGKILL",
//                 processGroupSurvivors (processes left in the agent's group after it exited)}
// ------------------------------------------------------------------------------------------------

import { spawn } from "node:child_process";
import { existsSync, readFileSync, watch, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { formatWithOptions } from "node:util";

const T0 = performance.now();
const STARTED_AT_EPOCH_MS = Date.now();
const now = () => Math.round((performance.now() - T0) * 1000) / 1000;

const ENTRIES = {
  v1: "@agentclientprotocol/sdk",
  "v1-unstable": "@agentclientprotocol/sdk/unstable",
  v2: "@agentclientprotocol/sdk/experimental/v2",
  "v2-unstable": "@agentclientprotocol/sdk/experimental/v2/unstable",
};

// ---------------------------------------------------------------------------------------------
// Output record. Everything below writes into `out`; it is printed exactly once at the end.

const out = {
  ok: false,
  startedAtEpochMs: STARTED_AT_EPOCH_MS,
  error: undefined,
  client: undefined,
  protocolVersion: undefined,
  initialize: undefined,
  agentLines: [],
  agentLineTimes: [],
  agentNonJsonLines: [],
  clientLines: [],
  clientLineTimes: [],
  updates: [],
  sessions: {},
  responses: {},
  steps: [],
  promptResponses: [],
  permissionRequests: [],
  elicitations: [],
  terminals: {},
  terminalInfo: {},
  background: null,
  clientStderr: [],
  droppedNotifications: [],
  warnings: [],
  agentStderr: "",
  exitCode: null,
  exitSignal: null,
  shutdown: {},
};

// ---------------------------------------------------------------------------------------------
// Capture everything the client library logs. The SDK reports a dropped (schema-invalid)
// notification only with `console.error("Error handling notification", ...)`. Nothing may be
// written to stdout except the final JSON, so console.log & co. are captured as well.

const realStderrWrite = process.stderr.write.bind(process.stderr);
let echoClientStderr = false;
function captureConsole(...args) {
  const text = formatWithOptions({ breakLength: Infinity, depth: 6, colors: false }, ...args);
  for (const line of text.split("\n")) {
    out.clientStderr.push(line);
    if (/Error handling notification/.test(line)) {
      out.droppedNotifications.push(line);
    }
  }
  if (echoClientStderr) {
    realStderrWrite(text + "\n");
  }
}
for (const name of ["error", "warn", "log", "info", "debug", "trace"]) {
  console[name] = captureConsole;
}

let printed = false;
function printResultAndExit(code) {
  if (printed) return;
  printed = true;
  if (out.error === undefined) delete out.error;
  // Exit only once the result is flushed; do not wait for stray handles.
  process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(code));
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

function fail(message) {
  throw new DriverError(message);
}

class DriverError extends Error {}

function describeError(error) {
  if (error && typeof error === "object" && typeof error.code === "number") {
    const described = { code: error.code, message: String(error.message ?? "") };
    if (error.data !== undefined) described.data = toJsonSafe(error.data);
    return described;
  }
  if (error instanceof Error) {
    return { name: error.name, message: error.message };
  }
  return { message: String(error) };
}

function errorText(error) {
  const d = describeError(error);
  return d.code !== undefined ? `JSON-RPC error ${d.code}: ${d.message}` : `${d.name ?? "Error"}: ${d.message}`;
}

function toJsonSafe(value) {
  try {
    return JSON.parse(JSON.stringify(value ?? null));
  } catch {
    return String(value);
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Partial structural match. Objects: every key of the pattern must match (extra keys in the
// actual value are fine). Arrays: same length, element-wise match. "$present" / "$absent"
// test for a key's existence (absent also accepts undefined). Primitives: strict equality.
function matches(actual, pattern) {
  if (pattern === "$present") return actual !== undefined;
  if (pattern === "$absent") return actual === undefined;
  if (Array.isArray(pattern)) {
    return Array.isArray(actual) && actual.length === pattern.length && pattern.every((p, i) => matches(actual[i], p));
  }
  if (pattern !== null && typeof pattern === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false;
    return Object.entries(pattern).every(([key, p]) => matches(actual[key], p));
  }
  return actual === pattern;
}

// ---------------------------------------------------------------------------------------------
// Change notification for waits: every recorded event bumps a generation and wakes waiters.

let wakeWaiters = [];
function changed() {
  const waiters = wakeWaiters;
  wakeWaiters = [];
  for (const wake of waiters) wake();
}
function nextChange() {
  return new Promise((resolve) => wakeWaiters.push(resolve));
}

let agentExited = false;

// Waits until `check()` returns a non-undefined value, re-checking on every recorded event.
async function waitUntil(check, timeoutMs, what) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (agentExited) {
      fail(`agent exited (code ${out.exitCode}, signal ${out.exitSignal}) while waiting for ${what}`);
    }
    const remaining = deadline - performance.now();
    if (remaining <= 0) fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    let timer;
    await Promise.race([nextChange(), new Promise((resolve) => (timer = setTimeout(resolve, Math.min(remaining, 250))))]);
    clearTimeout(timer);
  }
}

function withTimeout(promise, timeoutMs, what) {
  let timer;
  let done = false;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new DriverError(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  const exited = new Promise((_, reject) => {
    const poll = () => {
      if (done) return;
      if (agentExited) {
        // Give the connection a moment to deliver what the agent wrote before it exited.
        setTimeout(
          () => reject(new DriverError(`agent exited (code ${out.exitCode}, signal ${out.exitSignal}) while waiting for ${what}`)),
          200,
        ).unref();
      } else {
        nextChange().then(poll);
      }
    };
    poll();
  });
  return Promise.race([promise, timeout, exited]).finally(() => {
    done = true;
    clearTimeout(timer);
  });
}

// ---------------------------------------------------------------------------------------------
// Line recorders for both directions.

function lineRecorder(onLine) {
  let pending = Buffer.alloc(0);
  return {
    push(chunk) {
      pending = pending.length ? Buffer.concat([pending, Buffer.from(chunk)]) : Buffer.from(chunk);
      let index;
      while ((index = pending.indexOf(0x0a)) >= 0) {
        onLine(pending.subarray(0, index).toString("utf8"), true);
        pending = pending.subarray(index + 1);
      }
    },
    flush() {
      if (pending.length) {
        onLine(pending.toString("utf8"), false);
        pending = Buffer.alloc(0);
      }
    },
  };
}

const agentRecorder = lineRecorder((text, terminated) => {
  const t = now();
  const trimmed = text.trim();
  if (!trimmed) return;
  if (!terminated) out.warnings.push("the agent's last stdout line had no terminating newline");
  try {
    const line = JSON.parse(trimmed);
    out.agentLines.push(line);
    out.agentLineTimes.push(t);
    const update = line?.method === "session/update" ? line.params?.update : undefined;
    if (update?.sessionUpdate === "async_task_spawned") lastAsyncTaskId = update.asyncTaskId;
  } catch {
    out.agentNonJsonLines.push({ t, text });
  }
  changed();
});

const clientRecorder = lineRecorder((text) => {
  const trimmed = text.trim();
  if (!trimmed) return;
  try {
    out.clientLines.push(JSON.parse(trimmed));
  } catch {
    out.clientLines.push({ unparsable: text });
  }
  out.clientLineTimes.push(now());
});

// ---------------------------------------------------------------------------------------------
// Session bookkeeping.

const sessions = new Map(); // name -> state
const sessionNameById = new Map();
let currentSessionName;
let lastTerminalId;
let lastToolCallId;
let lastSubagentId;
let lastAsyncTaskId;
const terminalBytes = new Map();

function sessionState(name) {
  const key = name ?? currentSessionName;
  if (key === undefined) fail("no session exists yet (use newSession or autoSession)");
  const state = sessions.get(key);
  if (!state) fail(`unknown session name ${JSON.stringify(key)}`);
  return state;
}

// terminalId -> {parts: [Buffer], length}; concatenated lazily (bursts arrive in many chunks).
function appendTerminal(terminalId, bytes, replace) {
  let entry = terminalBytes.get(terminalId);
  if (!entry || replace) {
    entry = { parts: [], length: 0 };
    terminalBytes.set(terminalId, entry);
  }
  if (bytes.length) {
    entry.parts.push(bytes);
    entry.length += bytes.length;
  }
  const info = (out.terminalInfo[terminalId] ??= { chunks: 0, bytes: 0 });
  if (!replace) info.chunks += 1;
  info.bytes = entry.length;
}

function terminalBuffer(terminalId) {
  const entry = terminalBytes.get(terminalId);
  if (!entry) return undefined;
  if (entry.parts.length > 1) entry.parts = [Buffer.concat(entry.parts, entry.length)];
  return entry.parts[0] ?? Buffer.alloc(0);
}

function allTerminalsBase64() {
  return Object.fromEntries([...terminalBytes.keys()].map((id) => [id, terminalBuffer(id).toString("base64")]));
}

function patchTerminalInfo(terminalId, update, fields) {
  const info = (out.terminalInfo[terminalId] ??= { chunks: 0, bytes: 0 });
  for (const field of fields) {
    if (update[field] !== undefined) info[field] = toJsonSafe(update[field]);
  }
}

// Applies what a client would assemble from one session/update, in arrival order.
function applyUpdate(update) {
  if (!update || typeof update !== "object") return;
  const kind = update.sessionUpdate;
  if (kind === "subagent_update" && typeof update.sessionId === "string") {
    lastSubagentId = update.sessionId;
  }
  if (kind === "terminal_update" && typeof update.terminalId === "string") {
    lastTerminalId = update.terminalId;
    if (update.output === null) {
      appendTerminal(update.terminalId, Buffer.alloc(0), true);
    } else if (update.output && typeof update.output.data === "string") {
      appendTerminal(update.terminalId, Buffer.from(update.output.data, "base64"), true);
    } else {
      out.terminalInfo[update.terminalId] ??= { chunks: 0, bytes: 0 };
    }
    patchTerminalInfo(update.terminalId, update, ["command", "cwd", "exitStatus", "capabilities", "size", "_meta"]);
  } else if (kind === "terminal_output_chunk" && typeof update.terminalId === "string") {
    lastTerminalId = update.terminalId;
    appendTerminal(update.terminalId, Buffer.from(String(update.data ?? ""), "base64"), false);
  }
  if ((kind === "tool_call" || kind === "tool_call_update") && typeof update.toolCallId === "string") {
    lastToolCallId = update.toolCallId;
    // v1 terminal output as the TypeScript adapter sends it, under _meta (plain text).
    const meta = update._meta;
    if (meta && typeof meta === "object") {
      const info = meta.terminal_info;
      if (info && typeof info.terminal_id === "string") {
        lastTerminalId = info.terminal_id;
        out.terminalInfo[info.terminal_id] ??= { chunks: 0, bytes: 0 };
        out.terminalInfo[info.terminal_id].v1Meta = true;
      }
      // Both keys append (terminal_output is what Zed reads; terminal_output_delta what
      // clients that declare it read).
      for (const output of [meta.terminal_output, meta.terminal_output_delta]) {
        if (output && typeof output.terminal_id === "string" && typeof output.data === "string") {
          appendTerminal(output.terminal_id, Buffer.from(output.data, "utf8"), false);
        }
      }
      const exit = meta.terminal_exit;
      if (exit && typeof exit.terminal_id === "string") {
        const infoEntry = (out.terminalInfo[exit.terminal_id] ??= { chunks: 0, bytes: 0 });
        infoEntry.exitStatus = { exitCode: exit.exit_code ?? null, signal: exit.signal ?? null };
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reading the script.

function readScript() {
  const path = process.argv[2];
  const text = path && path !== "-" ? readFileSync(path, "utf8") : readFileSync(0, "utf8");
  return JSON.parse(text);
}

function substitute(value, session) {
  if (typeof value === "string") {
    if (value === "$lastTerminal") return lastTerminalId;
    if (value === "$lastToolCall") return lastToolCallId;
    if (value === "$lastSubagent") return lastSubagentId;
    if (value === "$lastAsyncTask") return lastAsyncTaskId;
    if (value === "$sessionId") return session?.id;
    if (value.startsWith("$session:")) return sessionState(value.slice("$session:".length)).id;
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, session));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, session)]));
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Main.

async function main() {
  let script;
  try {
    script = readScript();
  } catch (error) {
    out.error = `cannot read the script: ${error.message}`;
    return;
  }

  const entry = script.client ?? "v2";
  out.client = entry;
  if (!(entry in ENTRIES)) {
    out.error = `unknown client entry ${JSON.stringify(entry)} (expected one of ${Object.keys(ENTRIES).join(", ")})`;
    return;
  }
  const isV2 = entry.startsWith("v2");
  echoClientStderr = Boolean(script.echoClientStderr);
  const overallTimeoutMs = script.timeoutMs ?? 60000;
  const defaultStepTimeoutMs = script.stepTimeoutMs ?? 15000;
  const shutdownGraceMs = script.shutdownGraceMs ?? 5000;
  const agentSpec = script.agent ?? {};
  const argv = agentSpec.argv ?? agentSpec.command;
  if (!Array.isArray(argv) || argv.length === 0) {
    out.error = "script.agent.argv must be a non-empty array";
    return;
  }

  const acp = await import(ENTRIES[entry]);

  // --- spawn the agent in its own process group -----------------------------------------------
  const env = { ...process.env };
  for (const [key, value] of Object.entries(agentSpec.env ?? {})) {
    if (value === null) delete env[key];
    else env[key] = String(value);
  }
  const proc = spawn(argv[0], argv.slice(1), {
    cwd: agentSpec.cwd ?? process.cwd(),
    env,
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let spawnError;
  let resolveExit;
  const exited = new Promise((resolve) => (resolveExit = resolve));
  proc.on("error", (error) => {
    spawnError = error;
    agentExited = true;
    out.shutdown.exitedAt = now();
    resolveExit();
    changed();
  });
  proc.on("exit", (code, signal) => {
    out.exitCode = code;
    out.exitSignal = signal;
    out.shutdown.exitedAt = now();
    agentExited = true;
    resolveExit();
    changed();
  });
  const killGroup = (signal) => {
    if (!proc.pid) return;
    try {
      process.kill(-proc.pid, signal);
    } catch {
      try {
        proc.kill(signal);
      } catch {
        // already gone
      }
    }
  };
  killAgentNow = () => killGroup("SIGKILL");

  const stderrLimit = script.agentStderrLimit ?? 4 * 1024 * 1024;
  let stderrChunks = [];
  let stderrSize = 0;
  proc.stderr.on("data", (chunk) => {
    stderrChunks.push(chunk);
    stderrSize += chunk.length;
    while (stderrSize > stderrLimit && stderrChunks.length > 1) {
      stderrSize -= stderrChunks.shift().length;
    }
  });
  proc.stdin.on("error", () => {}); // EPIPE when the agent dies first

  // --- tap both directions ---------------------------------------------------------------
  // The agent's stdout is drained and recorded until the agent exits, even after the client
  // connection has closed (so that lines written during shutdown are validated too, and the
  // agent never hits a closed pipe while it shuts down).
  let toClient;
  let clientStoppedReading = false;
  const fromAgent = new ReadableStream({
    start(controller) {
      toClient = controller;
    },
    cancel() {
      clientStoppedReading = true;
    },
  });
  proc.stdout.on("data", (chunk) => {
    agentRecorder.push(chunk);
    if (!clientStoppedReading) {
      try {
        toClient.enqueue(new Uint8Array(chunk));
      } catch {
        clientStoppedReading = true;
      }
    }
  });
  proc.stdout.on("end", () => {
    agentRecorder.flush();
    if (!clientStoppedReading) {
      try {
        toClient.close();
      } catch {
        // already closed
      }
    }
  });
  // What the client writes goes to the agent's stdin, which only the shutdown below closes.
  const toAgent = new WritableStream({
    write(chunk) {
      clientRecorder.push(chunk);
      return new Promise((resolve) => {
        if (proc.stdin.destroyed || proc.stdin.writableEnded) {
          resolve();
          return;
        }
        proc.stdin.write(chunk, () => resolve());
      });
    },
  });
  const stream = acp.ndJsonStream(toAgent, fromAgent);

  // --- the client app ----------------------------------------------------------------------
  const app = acp.client({ name: script.clientInfo?.name ?? "claude-bg-acp-tests" });

  let permissionPolicy = script.permission ?? "allow_once";
  const heldPermissions = [];

  function chooseOutcome(params, policy) {
    if (policy === "cancelled") return { outcome: { outcome: "cancelled" } };
    if (policy && typeof policy === "object" && policy.optionId) {
      return { outcome: { outcome: "selected", optionId: policy.optionId } };
    }
    const fallbacks = {
      allow_once: ["allow_once", "allow_always"],
      allow_always: ["allow_always", "allow_once"],
      reject_once: ["reject_once", "reject_always"],
      reject_always: ["reject_always", "reject_once"],
    }[policy];
    if (!fallbacks) fail(`unknown permission policy ${JSON.stringify(policy)}`);
    const options = Array.isArray(params?.options) ? params.options : [];
    for (const kind of fallbacks) {
      const option = options.find((o) => o && o.kind === kind);
      if (option) return { outcome: { outcome: "selected", optionId: option.optionId } };
    }
    out.warnings.push(`permission request offered no option for policy ${policy}; answered cancelled`);
    return { outcome: { outcome: "cancelled" } };
  }

  app.onRequest("session/request_permission", async ({ params, signal }) => {
    const record = { t: now(), sessionId: params?.sessionId, params: toJsonSafe(params), answer: null, answeredAt: null };
    if (isV2) {
      const name = sessionNameById.get(params?.sessionId);
      const session = name !== undefined ? sessions.get(name)?.session : undefined;
      if (session) record.forBackgroundWork = session.isForBackgroundWork(params);
    }
    out.permissionRequests.push(record);
    changed();
    let policy = Array.isArray(permissionPolicy)
      ? permissionPolicy.length > 1
        ? permissionPolicy.shift()
        : permissionPolicy[0]
      : permissionPolicy;
    if (policy && typeof policy === "object" && typeof policy.delayMs === "number") {
      await sleep(policy.delayMs);
      policy = policy.then ?? "allow_once";
    }
    let answer;
    if (policy === "hold") {
      answer = await new Promise((resolve) => {
        const held = { record, params, resolve };
        heldPermissions.push(held);
        signal.addEventListener(
          "abort",
          () => {
            record.cancelledByAgent = true;
            const index = heldPermissions.indexOf(held);
            if (index >= 0) heldPermissions.splice(index, 1);
            resolve({ outcome: { outcome: "cancelled" } });
          },
          { once: true },
        );
      });
    } else {
      answer = chooseOutcome(params, policy);
    }
    record.answer = answer;
    record.answeredAt = now();
    changed();
    return answer;
  });

  if (script.elicitation !== undefined) {
    app.onRequest("elicitation/create", async ({ params, signal }) => {
      const record = { t: now(), params: toJsonSafe(params), answer: null, answeredAt: null };
      out.elicitations.push(record);
      changed();
      const answer =
        script.elicitation === "hold"
          ? await new Promise((resolve) => {
              signal.addEventListener(
                "abort",
                () => {
                  record.cancelledByAgent = true;
                  resolve({ action: "cancel" });
                },
                { once: true },
              );
            })
          : script.elicitation;
      record.answer = answer;
      record.answeredAt = now();
      changed();
      return answer;
    });
  }

  app.onNotification("session/update", async ({ params }) => {
    const name = sessionNameById.get(params.sessionId);
    const entry = { t: now(), sessionId: params.sessionId, session: name ?? null, update: toJsonSafe(params.update) };
    if (params._meta !== undefined) entry.meta = toJsonSafe(params._meta);
    out.updates.push(entry);
    // A session being loaded or resumed has a name before it has a state.
    const state = name !== undefined ? sessions.get(name) : undefined;
    if (state) state.seen += 1;
    applyUpdate(params.update);
    changed();
  });

  // --- steps ---------------------------------------------------------------------------------
  const stepRequests = new Map(); // step key -> { promise, settled, controller }

  function trackRequest(key, promise, controller, extra = {}) {
    const tracked = { promise, settled: false, controller, ...extra };
    stepRequests.set(key, tracked);
    promise.then(
      (result) => {
        tracked.settled = true;
        out.responses[key] = { ...(out.responses[key] ?? {}), t: now(), result: toJsonSafe(result) };
        changed();
      },
      (error) => {
        tracked.settled = true;
        out.responses[key] = { ...(out.responses[key] ?? {}), t: now(), error: describeError(error) };
        changed();
      },
    );
    return tracked;
  }

  async function settle(key, timeoutMs, what) {
    const tracked = stepRequests.get(key);
    if (!tracked) fail(`no request was sent by step ${JSON.stringify(key)}`);
    await withTimeout(
      tracked.promise.then(
        () => undefined,
        () => undefined,
      ),
      timeoutMs,
      what,
    );
    return out.responses[key];
  }

  function checkExpectation(step, key) {
    const response = out.responses[key];
    if (!response) return;
    const expect = step.expectError;
    if (expect === undefined || expect === false) {
      if (response.error) fail(`request failed: ${JSON.stringify(response.error)}`);
      return;
    }
    if (!response.error) fail(`expected an error response but got ${JSON.stringify(response.result)}`);
    if (typeof expect === "number" && response.error.code !== expect) {
      fail(`expected error code ${expect} but got ${JSON.stringify(response.error)}`);
    }
  }

  async function startSession(ctx, step, key) {
    const name = step.name ?? nextSessionName();
    if (sessions.has(name)) fail(`session name ${JSON.stringify(name)} already used`);
    const request = { cwd: step.cwd ?? script.cwd ?? process.cwd(), mcpServers: [], ...(script.session ?? {}), ...(step.request ?? {}) };
    const session = await withTimeout(ctx.buildSession(request).start(), step.timeoutMs ?? defaultStepTimeoutMs, "session/new");
    out.responses[key] = { t: now(), result: toJsonSafe(session.newSessionResponse), session: name };
    return registerSession(name, session, session.newSessionResponse);
  }

  function nextSessionName() {
    return sessions.size === 0 ? "main" : `session${sessions.size + 1}`;
  }

  // Opens a session by id: session/load, session/resume (the same session again when its id
  // is known) or session/fork (a new one). The id is mapped to its name before the request,
  // so that what is replayed before the response is counted as that session's.
  async function openSession(ctx, step, key, method) {
    const source = substitute(step.sessionId, undefined);
    if (typeof source !== "string") fail(`${step.op} needs a sessionId`);
    const forking = method === "session/fork";
    const known = forking ? undefined : sessionNameById.get(source);
    const name = step.name ?? known ?? nextSessionName();
    if (name !== known && sessions.has(name)) fail(`session name ${JSON.stringify(name)} already used`);
    const params = { sessionId: source, cwd: step.cwd ?? script.cwd ?? process.cwd(), mcpServers: [], ...(script.session ?? {}), ...(step.request ?? {}) };
    if (step.replayFrom !== undefined) params.replayFrom = step.replayFrom;
    if (!forking) {
      sessionNameById.set(source, name);
      for (const u of out.updates) if (u.sessionId === source) u.session = name;
    }
    const controller = new AbortController();
    trackRequest(key, ctx.request(method, params, { cancellationSignal: controller.signal }), controller, { session: name });
    const response = await settle(key, step.timeoutMs ?? defaultStepTimeoutMs, `the ${method} response`);
    out.responses[key].session = name;
    checkExpectation(step, key);
    if (response.error) {
      if (!forking && known === undefined) sessionNameById.delete(source);
      return;
    }
    const result = { ...response.result, sessionId: forking ? response.result.sessionId : source };
    // The library builds an ActiveSession only from session/new; its attach works for any answer.
    registerSession(name, ctx.attachSession(result), result);
  }

  function registerSession(name, session, response) {
    const earlier = sessions.get(name);
    if (earlier) {
      // A re-attached session: the new ActiveSession replaces the old one.
      earlier.session.dispose();
      earlier.session = session;
    }
    const state = earlier ?? {
      name,
      id: session.sessionId,
      session,
      seen: 0,
      surfaced: [],
      lastPromptKey: undefined,
      promptStartIndex: 0,
      idleConsumed: -1,
    };
    if (!earlier) {
      // Count updates for this id that the global handler saw before the id was known.
      state.seen = out.updates.filter((u) => u.sessionId === session.sessionId).length;
      for (const u of out.updates) if (u.sessionId === session.sessionId) u.session = name;
      sessions.set(name, state);
      out.sessions[name] = { sessionId: session.sessionId, newSessionResponse: toJsonSafe(response) };
    }
    sessionNameById.set(session.sessionId, name);
    currentSessionName = name;
    // Drain what the ActiveSession surfaces, so we know what its API delivered.
    (async () => {
      for (;;) {
        let message;
        try {
          message = await session.nextUpdate();
        } catch (error) {
          if (typeof error?.code === "number") continue; // a v1 prompt failure, already recorded
          return;
        }
        state.surfaced.push({ t: now(), kind: message.kind, stopReason: message.stopReason ?? null });
        changed();
      }
    })();
    return state;
  }

  function sessionUpdates(state, includeAll) {
    const result = [];
    out.updates.forEach((u, index) => {
      if (includeAll || u.sessionId === state.id) result.push({ u, index });
    });
    return result;
  }

  // v2: where the latest prompt's turn begins. A prompt sent while other work runs waits until
  // the agent inserts it (the user_message with the messageId of its answer); an idle before
  // that ended the earlier work (consecutive turns have an idle boundary), not this prompt.
  function insertedAt(state) {
    const answer = out.promptResponses.find((r) => r.step === state.lastPromptKey);
    const messageId = answer?.result?.messageId;
    if (messageId === undefined) return state.promptStartIndex;
    const index = out.updates.findIndex(
      (u) => u.sessionId === state.id && u.update?.sessionUpdate === "user_message" && u.update.messageId === messageId,
    );
    return index < 0 ? state.promptStartIndex : index + 1;
  }

  function stepFromIndex(step, state) {
    if (step.after !== undefined) {
      const marker = out.steps.find((s) => s.key === String(step.after));
      if (!marker) fail(`after: no completed step ${JSON.stringify(step.after)}`);
      return step.raw ? marker.agentLineIndexAtEnd : marker.updateIndexAtEnd;
    }
    if (step.fresh) return step.raw ? out.agentLines.length : out.updates.length;
    return 0;
  }

  // The updates a waitFor searches: what the client library accepted, or (raw) what the agent wrote.
  function updateEntry(step, index) {
    if (!step.raw) return out.updates[index];
    const line = out.agentLines[index];
    if (line?.method !== "session/update") return undefined;
    return { sessionId: line.params?.sessionId, update: line.params?.update, t: out.agentLineTimes[index] };
  }

  const ops = {
    async initialize(ctx, step, key) {
      const clientInfo = { name: "claude-bg-acp-tests", version: "0.0.0", ...(script.clientInfo ?? {}) };
      let params;
      if (isV2) {
        params = { info: clientInfo, capabilities: script.capabilities ?? {}, ...(script.initialize ?? {}), ...(step.params ?? {}) };
      } else {
        params = {
          protocolVersion: 1,
          clientCapabilities: script.capabilities ?? {},
          clientInfo,
          ...(script.initialize ?? {}),
          ...(step.params ?? {}),
        };
      }
      const controller = new AbortController();
      trackRequest(key, ctx.request("initialize", params), controller);
      const response = await settle(key, step.timeoutMs ?? defaultStepTimeoutMs, "the initialize response");
      out.initialize = { request: params, ...response };
      if (response.result) out.protocolVersion = response.result.protocolVersion;
      checkExpectation(step, key);
    },

    async newSession(ctx, step, key) {
      await startSession(ctx, step, key);
    },

    async loadSession(ctx, step, key) {
      await openSession(ctx, step, key, "session/load");
    },

    async resumeSession(ctx, step, key) {
      await openSession(ctx, step, key, "session/resume");
    },

    async forkSession(ctx, step, key) {
      await openSession(ctx, step, key, "session/fork");
    },

    async listSessions(ctx, step, key) {
      const pages = [];
      let cursor = step.cursor;
      do {
        const params = { ...(step.cwd !== undefined ? { cwd: step.cwd } : {}), ...(cursor !== undefined ? { cursor } : {}) };
        const controller = new AbortController();
        const pageKey = `${key}#${pages.length}`;
        trackRequest(pageKey, ctx.request("session/list", params), controller);
        const response = await settle(pageKey, step.timeoutMs ?? defaultStepTimeoutMs, "the session/list response");
        checkExpectation(step, pageKey);
        if (response.error) {
          out.responses[key] = response;
          return;
        }
        pages.push(response.result);
        cursor = response.result.nextCursor ?? undefined;
      } while (step.allPages && cursor !== undefined);
      out.responses[key] = { t: now(), pages, sessions: pages.flatMap((page) => page.sessions) };
    },

    async prompt(ctx, step, key) {
      const state = sessionState(step.session);
      const content = step.content ?? [{ type: "text", text: String(step.text ?? "") }];
      const controller = new AbortController();
      state.lastPromptKey = key;
      state.promptStartIndex = out.updates.length;
      const promise = state.session.prompt(substitute(content, state), { cancellationSignal: controller.signal });
      const tracked = trackRequest(key, promise, controller, { session: state.name });
      out.responses[key] = { session: state.name, sentAt: now() };
      promise.then(
        (result) => out.promptResponses.push({ step: key, session: state.name, t: now(), result: toJsonSafe(result) }),
        (error) => out.promptResponses.push({ step: key, session: state.name, t: now(), error: describeError(error) }),
      );
      if (step.await === false) return;
      await settle(key, step.timeoutMs ?? defaultStepTimeoutMs, `the response to prompt step ${key}`);
      checkExpectation(step, key);
      return tracked;
    },

    async awaitResponse(ctx, step, key) {
      const target = String(step.step);
      await settle(target, step.timeoutMs ?? defaultStepTimeoutMs, `the response to step ${target}`);
      out.responses[key] = { t: now(), of: target };
      checkExpectation(step, target);
    },

    async cancelRequest(ctx, step) {
      const tracked = stepRequests.get(String(step.step));
      if (!tracked) fail(`no request was sent by step ${JSON.stringify(step.step)}`);
      tracked.controller.abort();
    },

    async waitFor(ctx, step, key) {
      const all = step.session === "*";
      const state = all ? undefined : step.sessionId === undefined ? sessionState(step.session) : undefined;
      const from = stepFromIndex(step, state);
      const pattern = substitute(step.match ?? {}, state);
      const count = step.count ?? 1;
      const kind = step.update;
      const hits = [];
      let index = from; // scan each update once
      const found = await waitUntil(
        () => {
          for (; index < (step.raw ? out.agentLines.length : out.updates.length); index++) {
            const u = updateEntry(step, index);
            if (u === undefined) continue;
            if (!all) {
              if (step.sessionId !== undefined ? u.sessionId !== step.sessionId : u.sessionId !== state.id) continue;
            }
            if (kind !== undefined && u.update?.sessionUpdate !== kind) continue;
            if (!matches(u.update, pattern)) continue;
            hits.push({ index, update: u.update, t: u.t });
            if (hits.length >= count) return hits;
          }
          return undefined;
        },
        step.timeoutMs ?? defaultStepTimeoutMs,
        `${count} update(s) ${kind ?? "(any kind)"} matching ${JSON.stringify(pattern)}`,
      );
      out.responses[key] = { t: now(), matched: found };
    },

    async waitIdle(ctx, step, key) {
      const state = sessionState(step.session);
      const timeoutMs = step.timeoutMs ?? defaultStepTimeoutMs;
      if (!isV2) {
        if (state.lastPromptKey === undefined) fail("waitIdle (v1) needs an earlier prompt in this session");
        const response = await settle(state.lastPromptKey, timeoutMs, `the response to prompt step ${state.lastPromptKey}`);
        out.responses[key] = { t: now(), of: state.lastPromptKey, ...response };
        if (step.match && !matches(response.result, substitute(step.match, state))) {
          fail(`prompt response ${JSON.stringify(response.result ?? response.error)} does not match ${JSON.stringify(step.match)}`);
        }
        return;
      }
      const pattern = substitute(step.match ?? {}, state);
      const from = step.after !== undefined || step.fresh ? stepFromIndex(step, state) : Math.max(insertedAt(state), state.idleConsumed + 1);
      let index = from; // scan each update once
      const found = await waitUntil(
        () => {
          for (; index < out.updates.length; index++) {
            const u = out.updates[index];
            if (u.sessionId !== state.id) continue;
            const update = u.update;
            if (update?.sessionUpdate !== "state_update" || update.state !== "idle") continue;
            if (!matches(update, pattern)) continue;
            return { index, update, t: u.t };
          }
          return undefined;
        },
        timeoutMs,
        `an idle state_update matching ${JSON.stringify(pattern)}`,
      );
      state.idleConsumed = found.index;
      out.responses[key] = { t: now(), matched: found, background: toJsonSafe(state.session.background ?? null) };
    },

    async waitBackground(ctx, step, key) {
      if (!isV2) fail("waitBackground needs a v2 client");
      const state = sessionState(step.session);
      const contains = step.contains === undefined ? undefined : substitute(step.contains, state);
      const absent = step.absent === undefined ? undefined : substitute(step.absent, state);
      const found = await waitUntil(
        () => {
          const background = state.session.background;
          if (background === undefined) return step.unreported ? null : undefined;
          if (step.unreported) return undefined;
          if (step.length !== undefined && background.length !== step.length) return undefined;
          if (step.empty && background.length !== 0) return undefined;
          if (contains !== undefined && !background.some((item) => matches(item, contains))) return undefined;
          if (absent !== undefined && background.some((item) => matches(item, absent))) return undefined;
          return background;
        },
        step.timeoutMs ?? defaultStepTimeoutMs,
        `a background list (${JSON.stringify({ length: step.length, empty: step.empty, contains, absent })})`,
      );
      out.responses[key] = { t: now(), background: toJsonSafe(found) };
    },

    async waitForTerminalBytes(ctx, step, key) {
      const terminalId = substitute(step.terminalId ?? "$lastTerminal", undefined);
      const needle = step.containsBase64 !== undefined ? Buffer.from(step.containsBase64, "base64") : step.contains !== undefined ? Buffer.from(String(step.contains), "utf8") : undefined;
      let scannedEntry;
      let scanFrom = 0; // search only bytes not searched before (bursts come in many chunks)
      const found = await waitUntil(
        () => {
          const id = terminalId ?? lastTerminalId;
          if (id === undefined) return undefined;
          const entry = terminalBytes.get(id);
          if (!entry) return undefined;
          if (entry !== scannedEntry) {
            scannedEntry = entry; // a replacement snapshot starts a new buffer
            scanFrom = 0;
          }
          if (step.minBytes !== undefined && entry.length < step.minBytes) return undefined;
          if (needle !== undefined) {
            const bytes = terminalBuffer(id);
            const at = bytes.indexOf(needle, scanFrom);
            if (at < 0) {
              scanFrom = Math.max(0, bytes.length - needle.length + 1);
              return undefined;
            }
          }
          return { terminalId: id, bytes: entry.length };
        },
        step.timeoutMs ?? defaultStepTimeoutMs,
        `terminal ${terminalId ?? "$lastTerminal"} output (${JSON.stringify({ contains: step.contains, containsBase64: step.containsBase64, minBytes: step.minBytes })})`,
      );
      out.responses[key] = { t: now(), ...found };
    },

    async waitForPermission(ctx, step, key) {
      const count = step.count ?? 1;
      const pattern = step.match ?? {};
      const found = await waitUntil(
        () => {
          const hits = out.permissionRequests.filter((r) => matches(r.params, pattern));
          return hits.length >= count ? hits.slice(0, count) : undefined;
        },
        step.timeoutMs ?? defaultStepTimeoutMs,
        `${count} permission request(s) matching ${JSON.stringify(pattern)}`,
      );
      out.responses[key] = { t: now(), requests: found };
    },

    async waitForElicitation(ctx, step, key) {
      const found = await waitUntil(
        () => (out.elicitations.length >= (step.count ?? 1) ? out.elicitations.slice() : undefined),
        step.timeoutMs ?? defaultStepTimeoutMs,
        `${step.count ?? 1} elicitation/create request(s)`,
      );
      out.responses[key] = { t: now(), requests: found };
    },

    async answerPermission(ctx, step, key) {
      const held = heldPermissions.shift();
      if (!held) fail("answerPermission: no held permission request (use the 'hold' policy)");
      const answer = chooseOutcome(held.params, step.policy ?? "allow_once");
      held.resolve(answer);
      out.responses[key] = { t: now(), answer };
    },

    async setPermission(ctx, step) {
      permissionPolicy = step.policy;
    },

    async cancel(ctx, step, key) {
      const state = sessionState(step.session);
      await ctx.notify("session/cancel", { sessionId: state.id });
      out.responses[key] = { t: now(), sessionId: state.id };
    },

    async cancelTerminal(ctx, step, key) {
      if (!isV2) fail("cancelTerminal needs a v2 client");
      const state = sessionState(step.session);
      const terminalId = substitute(step.terminalId ?? "$lastTerminal", state);
      if (terminalId === undefined) fail("cancelTerminal: no terminal id (none seen yet)");
      const canCancel = state.session.canCancelTerminal(terminalId);
      out.responses[key] = { terminalId, canCancel, sentAt: now() };
      const controller = new AbortController();
      const promise = step.force
        ? ctx.request("terminal/cancel", { sessionId: state.id, terminalId })
        : state.session.cancelTerminal(terminalId, { cancellationSignal: controller.signal });
      trackRequest(key, promise, controller);
      await settle(key, step.timeoutMs ?? defaultStepTimeoutMs, `the terminal/cancel response for ${terminalId}`);
      checkExpectation(step, key);
    },

    async cancelToolCall(ctx, step, key) {
      if (!isV2) fail("cancelToolCall needs a v2 client");
      const state = sessionState(step.session);
      const toolCallId = substitute(step.toolCallId ?? "$lastToolCall", state);
      if (toolCallId === undefined) fail("cancelToolCall: no tool call id (none seen yet)");
      const canCancel = state.session.canCancelToolCall(toolCallId);
      out.responses[key] = { toolCallId, canCancel, sentAt: now() };
      const controller = new AbortController();
      const promise = step.force
        ? ctx.request("tool_call/cancel", { sessionId: state.id, toolCallId })
        : state.session.cancelToolCall(toolCallId, { cancellationSignal: controller.signal });
      trackRequest(key, promise, controller);
      await settle(key, step.timeoutMs ?? defaultStepTimeoutMs, `the tool_call/cancel response for ${toolCallId}`);
      checkExpectation(step, key);
    },

    async closeSession(ctx, step, key) {
      const state = sessionState(step.session);
      const controller = new AbortController();
      trackRequest(key, ctx.request("session/close", { sessionId: state.id }), controller);
      await settle(key, step.timeoutMs ?? defaultStepTimeoutMs, "the session/close response");
      checkExpectation(step, key);
    },

    async request(ctx, step, key) {
      const state = currentSessionName === undefined ? undefined : sessionState(step.session);
      const controller = new AbortController();
      trackRequest(key, ctx.request(step.method, substitute(step.params ?? {}, state), { cancellationSignal: controller.signal }), controller);
      if (step.await === false) return;
      await settle(key, step.timeoutMs ?? defaultStepTimeoutMs, `the ${step.method} response`);
      checkExpectation(step, key);
    },

    async notify(ctx, step, key) {
      const state = currentSessionName === undefined ? undefined : sessionState(step.session);
      await ctx.notify(step.method, substitute(step.params ?? {}, state));
      out.responses[key] = { t: now() };
    },

    async snapshot(ctx, step, key) {
      const result = { t: now(), sessions: {} };
      for (const [name, state] of sessions) {
        const entry = { sessionId: state.id };
        if (isV2) {
          entry.background = toJsonSafe(state.session.background ?? null);
          entry.canCancelTerminal = {};
          entry.canCancelToolCall = {};
          for (const terminalId of Object.keys(out.terminalInfo)) {
            entry.canCancelTerminal[terminalId] = state.session.canCancelTerminal(terminalId);
          }
          const toolCallIds = new Set(
            out.updates.filter((u) => u.sessionId === state.id && typeof u.update?.toolCallId === "string").map((u) => u.update.toolCallId),
          );
          for (const toolCallId of toolCallIds) {
            entry.canCancelToolCall[toolCallId] = state.session.canCancelToolCall(toolCallId);
          }
        }
        result.sessions[name] = entry;
      }
      result.terminals = allTerminalsBase64();
      out.responses[key] = result;
    },

    async sleepMs(ctx, step) {
      await sleep(step.ms ?? 0);
    },

    async touch(ctx, step) {
      writeFileSync(step.path, "");
    },

    async waitForFile(ctx, step) {
      // The folder is watched before the file is looked for, so one made in between is seen.
      let watcher;
      const appeared = new Promise((resolve) => {
        watcher = watch(dirname(step.path), () => existsSync(step.path) && resolve());
        if (existsSync(step.path)) resolve();
      });
      try {
        await withTimeout(appeared, step.timeoutMs ?? defaultStepTimeoutMs, `the file ${step.path}`);
      } finally {
        watcher.close();
      }
    },
  };

  async function runSteps(ctx) {
    const planned = [];
    if (script.autoInitialize !== false) {
      planned.push({ key: "initialize", step: { op: "initialize" } });
      if (script.autoSession !== false) planned.push({ key: "newSession", step: { op: "newSession" } });
    }
    (script.steps ?? []).forEach((step, index) => planned.push({ key: String(step.id ?? index), step }));
    for (const { key, step } of planned) {
      if (aborted) return;
      const record = { key, op: step.op, tStart: now() };
      out.steps.push(record);
      const op = ops[step.op];
      try {
        if (!op) fail(`unknown op ${JSON.stringify(step.op)}`);
        await op(ctx, step, key);
        record.ok = true;
      } catch (error) {
        record.ok = false;
        record.error = error instanceof DriverError ? error.message : errorText(error);
        throw new DriverError(`step ${key} (${step.op}) failed: ${record.error}`);
      } finally {
        record.tEnd = now();
        record.updateIndexAtEnd = out.updates.length;
        record.agentLineIndexAtEnd = out.agentLines.length;
      }
    }
  }

  // --- run -----------------------------------------------------------------------------------
  let aborted = false;
  let overallTimer;
  const overall = new Promise((_, reject) => {
    overallTimer = setTimeout(() => reject(new DriverError(`overall timeout of ${overallTimeoutMs} ms reached`)), overallTimeoutMs);
  });
  try {
    if (spawnError) throw spawnError;
    await app.connectWith(stream, async (ctx) => {
      try {
        await Promise.race([runSteps(ctx), overall]);
      } finally {
        aborted = true;
        // Let notifications that are already on their way be processed by the client.
        await sleep(script.settleMs ?? 50);
      }
    });
    if (spawnError) throw spawnError;
    out.ok = true;
  } catch (error) {
    out.ok = false;
    out.error = spawnError ? `cannot start the agent ${JSON.stringify(argv)}: ${spawnError.message}` : error instanceof DriverError ? error.message : errorText(error);
  } finally {
    clearTimeout(overallTimer);
  }

  // --- stop the agent: close stdin, wait, SIGTERM, wait, SIGKILL -----------------------------
  out.shutdown.stdinClosedAt = now();
  try {
    proc.stdin.end();
  } catch {
    // ignore
  }
  const waitExit = (ms) => Promise.race([exited.then(() => true), sleep(ms).then(() => false)]);
  if (!agentExited && !(await waitExit(shutdownGraceMs))) {
    out.shutdown.forced = "SIGTERM";
    killGroup("SIGTERM");
    if (!(await waitExit(2000))) {
      out.shutdown.forced = "SIGKILL";
      killGroup("SIGKILL");
      await waitExit(2000);
    }
  } else if (!agentExited) {
    await exited;
  }
  // Other members of the process group (children of the agent) must not outlive the run:
  // note whether any were left, then kill them.
  if (proc.pid) {
    try {
      process.kill(-proc.pid, 0);
      out.shutdown.processGroupSurvivors = true;
    } catch {
      out.shutdown.processGroupSurvivors = false;
    }
  }
  killGroup("SIGKILL");
  if (out.shutdown.exitedAt !== undefined) {
    out.shutdown.exitAfterStdinCloseMs = Math.max(0, Math.round((out.shutdown.exitedAt - out.shutdown.stdinClosedAt) * 1000) / 1000);
  }
  // Give the stdout/stderr pipes a moment to drain.
  await sleep(20);
  agentRecorder.flush();

  out.agentStderr = Buffer.concat(stderrChunks).toString("utf8");
  out.terminals = allTerminalsBase64();
  for (const [name, state] of sessions) {
    const entry = out.sessions[name];
    entry.seenUpdates = state.seen;
    entry.surfacedUpdates = state.surfaced.filter((m) => isV2 || m.kind !== "stop").length;
    entry.surfacedStops = state.surfaced.filter((m) => m.kind === "stop").length;
    if (isV2) {
      entry.background = toJsonSafe(state.session.background ?? null);
      entry.canCancelTerminal = Object.fromEntries(Object.keys(out.terminalInfo).map((id) => [id, state.session.canCancelTerminal(id)]));
    }
  }
  const first = sessions.values().next().value;
  out.background = first && isV2 ? toJsonSafe(first.session.background ?? null) : null;
  for (const state of sessions.values()) {
    try {
      state.session.dispose();
    } catch {
      // ignore
    }
  }
}

// If the driver itself is stopped (for example by the Python harness's own timeout), stop the
// agent's process group and still print what was recorded so far.
let killAgentNow = () => {};
process.on("exit", () => killAgentNow());
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => {
    killAgentNow();
    out.ok = false;
    out.error ??= `the driver received ${signal} before the run finished`;
    printResultAndExit(1);
  });
}

process.on("unhandledRejection", (error) => {
  out.warnings.push(`unhandled rejection: ${errorText(error)}`);
});

main()
  .catch((error) => {
    out.ok = false;
    out.error = `driver crashed: ${error?.stack ?? error}`;
  })
  .finally(() => printResultAndExit(0));
