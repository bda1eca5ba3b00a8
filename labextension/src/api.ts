/**
 * Typed calls between the extension and Co: what the kernel sends (tool-call
 * bundles, the status in `kernel_info_reply` and `execute_reply` metadata) and
 * the server extension's activity endpoint.
 *
 * Everything that crosses a wire is parsed here, defensively, so the widgets
 * only ever see well-formed values.
 */
import { URLExt } from '@jupyterlab/coreutils';
import type { KernelMessage } from '@jupyterlab/services';
import { ServerConnection } from '@jupyterlab/services';

/** The MIME type of a tool-call bundle (see `co_kernel/frontend/_toolcard.py`). */
export const TOOL_CALL_MIME = 'application/vnd.co.tool-call+json';

/** The key under which the kernel reports its status (`co_kernel/status/_lab.py`). */
export const STATUS_KEY = 'co';

/** The server extension's URL namespace (`co_kernel/server/__init__.py`). */
export const API_NAMESPACE = 'co-kernel';

/** How a tool call stands. */
export type ToolStatus =
  'running' | 'waiting' | 'ok' | 'error' | 'denied' | 'interrupted';

const TOOL_STATUSES: ReadonlyArray<ToolStatus> = [
  'running',
  'waiting',
  'ok',
  'error',
  'denied',
  'interrupted'
];

/** One tool call, as the kernel's MIME bundle describes it. */
export interface IToolCall {
  /** The model's id for the call. */
  callId: string;
  /** Tool name. */
  tool: string;
  /** Arguments: an object, or the raw text the model sent. */
  args: unknown;
  /** How the call stands. */
  status: ToolStatus;
  /** How it was allowed or refused (approved, denied, yolo, ...), if decided. */
  decision: string | null;
  /** Seconds the tool ran, when known. */
  duration: number | null;
  /** What came back, as text. */
  result: string | null;
  /** Extra text, e.g. the unified diff of a file edit. */
  detail: string | null;
  /** Whether the call waits for a person's decision before it runs. */
  needsApproval: boolean;
  /** Hidden characters the kernel found in the arguments and the change. */
  hidden: string[];
}

/** What the status bar shows about a Co session. */
export interface ICoStatus {
  /** Co's version. */
  version: string;
  /** The session (conversation) id. */
  sessionId: string | null;
  /** provider:model, or null when none is configured. */
  model: string | null;
  /** Turns in the conversation. */
  turns: number;
  /** Prompt tokens of the conversation's model responses. */
  inputTokens: number;
  /** Completion tokens of the conversation's model responses. */
  outputTokens: number;
  /** What those tokens cost, as the kernel writes it (`$0.0123`, `price unknown`). */
  cost: string | null;
  /** Session yolo: every call is approved without asking. */
  yolo: boolean;
  /** The policy for runs nobody watches (ask, deny, approve). */
  approvalMode: string | null;
  /** Why the kernel could not report its session, if it could not. */
  error: string | null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * Arguments in the order the model wrote them. A saved notebook sorts an
 * output's keys (nbformat writes JSON with sorted keys), so the kernel sends
 * the order beside them (`arg_order`); keys it does not name keep their place
 * after the named ones.
 */
function ordered(args: unknown, order: unknown): unknown {
  if (!isObject(args) || !Array.isArray(order)) {
    return args;
  }
  const out: Record<string, unknown> = {};
  for (const key of order) {
    if (typeof key === 'string' && key in args) {
      out[key] = args[key];
    }
  }
  return { ...out, ...args };
}

/**
 * A tool call from the bundle's JSON; fields that are missing or of the
 * wrong type get neutral defaults, so an old or foreign bundle still renders.
 */
export function parseToolCall(data: unknown): IToolCall {
  const d = isObject(data) ? data : {};
  const status = TOOL_STATUSES.find(s => s === d.status) ?? 'running';
  return {
    callId: str(d.call_id) ?? '',
    tool: str(d.tool) ?? 'tool',
    args: ordered(d.args, d.arg_order) ?? null,
    status,
    decision: str(d.decision),
    duration: num(d.duration),
    result: str(d.result),
    detail: str(d.detail),
    needsApproval: d.needs_approval === true,
    hidden: Array.isArray(d.hidden)
      ? d.hidden.filter((h): h is string => typeof h === 'string')
      : []
  };
}

/** The kernel's status report from its JSON, or null when it is not one. */
export function parseCoStatus(value: unknown): ICoStatus | null {
  if (!isObject(value) || typeof value.version !== 'string') {
    return null;
  }
  return {
    version: value.version,
    sessionId: str(value.session_id),
    model: str(value.model),
    turns: num(value.turns) ?? 0,
    inputTokens: num(value.input_tokens) ?? 0,
    outputTokens: num(value.output_tokens) ?? 0,
    cost: str(value.cost),
    yolo: value.yolo === true,
    approvalMode: str(value.approval_mode),
    error: str(value.error)
  };
}

/** The status a kernel message carries: `kernel_info_reply` or `execute_reply`. */
export function statusFromMessage(
  msg: KernelMessage.IMessage
): ICoStatus | null {
  if (msg.header.msg_type === 'kernel_info_reply') {
    return parseCoStatus((msg.content as Record<string, unknown>)[STATUS_KEY]);
  }
  if (msg.header.msg_type === 'execute_reply') {
    return parseCoStatus(
      (msg.metadata as Record<string, unknown> | undefined)?.[STATUS_KEY]
    );
  }
  return null;
}

/** Whether a tool call waits for a person's decision, as its card last said. */
export interface IApprovalState {
  /** The model's id for the call. */
  callId: string;
  /** Tool name. */
  tool: string;
  /** True while the call waits for Approve / Deny. */
  waiting: boolean;
}

/**
 * The approval state a tool-call card carries: the kernel shows each call as
 * one output (`display_data`, then `update_display_data`), with `waiting`
 * while it asks and another status once decided.
 */
export function approvalFromMessage(
  msg: KernelMessage.IMessage
): IApprovalState | null {
  const type = msg.header.msg_type;
  if (type !== 'display_data' && type !== 'update_display_data') {
    return null;
  }
  const data = (msg.content as Record<string, unknown>).data;
  if (!isObject(data) || !isObject(data[TOOL_CALL_MIME])) {
    return null;
  }
  const call = parseToolCall(data[TOOL_CALL_MIME]);
  return {
    callId: call.callId,
    tool: call.tool,
    waiting: call.status === 'waiting'
  };
}

/** The status in a kernel's `kernel_info_reply` content. */
export function statusFromInfo(info: unknown): ICoStatus | null {
  return isObject(info) ? parseCoStatus(info[STATUS_KEY]) : null;
}

/** Filters of the activity panel; unset means "any". */
export interface IActivityQuery {
  /** Only this session. */
  session?: string;
  /** Only this tool. */
  tool?: string;
  /** Only this decision. */
  decision?: string;
  /** Only rows at or after this Unix time (seconds). */
  since?: number;
  /** At most this many rows. */
  limit?: number;
}

/** One audit row (`co_kernel/telemetry/_audit.py`). */
export interface IActivityRow {
  /** Row id. */
  id: number;
  /** Unix time of the decision. */
  ts: number;
  /** Session the action belongs to. */
  session_id: string;
  /** Turn within the session. */
  turn: number;
  /** Tool or guarded operation. */
  tool: string;
  /** call, read, write, fetch, ... */
  action: string;
  /** Path, URL, command, ... */
  target: string | null;
  /** auto, approved, denied, yolo, ... */
  decision: string;
  /** waiting, running, ok, error, denied, refused, interrupted, kernel ended. */
  status: string;
  /** Characters returned to the model. */
  result_size: number | null;
  /** How long the action ran. */
  duration_ms: number | null;
  /** A short reason. */
  detail: string | null;
  /** The session's notebook, relative to the server's root; absent if unknown. */
  notebook?: string | null;
}

/** One session in the activity panel's list. */
export interface ISessionSummary {
  /** Session id. */
  session_id: string;
  /** Unix time of its first audited action. */
  first: number;
  /** Unix time of its last audited action. */
  last: number;
  /** Turns with audited actions. */
  turns: number;
  /** Audited actions. */
  calls: number;
  /** Actions denied or refused. */
  refused: number;
  /** What its turns cost (`$0.0123`, `price unknown`); null when none was priced. */
  cost?: string | null;
  /** Its notebook, relative to the server's root (or as the kernel was told). */
  notebook?: string | null;
  /** True when its kernel was started without a notebook (a console). */
  console?: boolean;
}

/** The activity endpoint's answer. */
export interface IActivityResponse {
  /** The telemetry database read. */
  db: string;
  /** Matching rows, newest first. */
  rows: IActivityRow[];
  /** Sessions, most recent first. */
  sessions: ISessionSummary[];
  /** Tool names seen, for the filter. */
  tools: string[];
  /** Decisions, for the filter. */
  decisions: string[];
}

/** The endpoint's path and query for a set of filters. */
export function activityPath(query: IActivityQuery): string {
  const params = new URLSearchParams();
  for (const key of ['session', 'tool', 'decision'] as const) {
    const value = query[key];
    if (value) {
      params.set(key, value);
    }
  }
  if (query.since !== undefined) {
    params.set('since', String(query.since));
  }
  if (query.limit !== undefined) {
    params.set('limit', String(query.limit));
  }
  const search = params.toString();
  return `${API_NAMESPACE}/activity${search ? `?${search}` : ''}`;
}

/** Ask the server extension for audit rows. */
export async function fetchActivity(
  query: IActivityQuery,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<IActivityResponse> {
  const url = URLExt.join(settings.baseUrl, activityPath(query));
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const body = await response.text();
  let data: any = null;
  try {
    data = body ? JSON.parse(body) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message =
      isObject(data) && typeof data.message === 'string'
        ? data.message
        : `${response.status} ${response.statusText}`;
    throw new ServerConnection.ResponseError(response, message);
  }
  return data as IActivityResponse;
}
