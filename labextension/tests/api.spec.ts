import type { KernelMessage } from '@jupyterlab/services';
import { describe, expect, it } from 'vitest';

import {
  activityPath,
  approvalFromMessage,
  parseCoStatus,
  parseToolCall,
  statusFromInfo,
  statusFromMessage
} from '../src/api';

const STATUS = {
  version: '0.1.0',
  session_id: 's1',
  model: 'compat:scripted',
  turns: 1,
  input_tokens: 120,
  output_tokens: 30,
  cost: '$0.0006',
  yolo: false,
  approval_mode: 'ask'
};

function message(
  msgType: string,
  content: Record<string, unknown>,
  metadata: Record<string, unknown> = {}
): KernelMessage.IMessage {
  return {
    header: {
      msg_type: msgType,
      msg_id: 'm',
      session: 's',
      username: 'u',
      date: '',
      version: '5.3'
    },
    parent_header: {},
    metadata,
    content,
    channel: 'shell',
    buffers: []
  } as unknown as KernelMessage.IMessage;
}

describe('kernel status', () => {
  it('is read from kernel_info_reply content and execute_reply metadata', () => {
    const fromInfo = statusFromMessage(
      message('kernel_info_reply', { implementation: 'co', co: STATUS })
    );
    expect(fromInfo).toEqual({
      version: '0.1.0',
      sessionId: 's1',
      model: 'compat:scripted',
      turns: 1,
      inputTokens: 120,
      outputTokens: 30,
      cost: '$0.0006',
      yolo: false,
      approvalMode: 'ask',
      error: null
    });
    const fromReply = statusFromMessage(
      message(
        'execute_reply',
        { status: 'ok' },
        { co: { ...STATUS, yolo: true } }
      )
    );
    expect(fromReply?.yolo).toBe(true);
    expect(statusFromInfo({ implementation: 'co', co: STATUS })?.model).toBe(
      'compat:scripted'
    );
  });

  it('is absent for other kernels and other messages', () => {
    expect(
      statusFromMessage(
        message('kernel_info_reply', { implementation: 'ipython' })
      )
    ).toBeNull();
    expect(
      statusFromMessage(message('execute_reply', { status: 'ok' }))
    ).toBeNull();
    expect(statusFromMessage(message('status', { co: STATUS }))).toBeNull();
    expect(parseCoStatus({ model: 'x' })).toBeNull();
    expect(parseCoStatus('co')).toBeNull();
  });

  it('keeps a reported problem', () => {
    expect(
      parseCoStatus({ version: '0.1.0', error: 'ConfigError: bad' })?.error
    ).toBe('ConfigError: bad');
  });
});

describe('tool-call bundle', () => {
  it('maps the kernel payload', () => {
    expect(
      parseToolCall({
        call_id: 'c',
        tool: 't',
        args: { a: 1 },
        status: 'error',
        decision: 'yolo',
        duration: 1.5,
        result: 'boom',
        detail: null,
        needs_approval: true
      })
    ).toEqual({
      callId: 'c',
      tool: 't',
      args: { a: 1 },
      status: 'error',
      decision: 'yolo',
      duration: 1.5,
      result: 'boom',
      detail: null,
      needsApproval: true,
      hidden: []
    });
  });
});

describe('approval state', () => {
  const card = (status: string): Record<string, unknown> => ({
    data: {
      'application/vnd.co.tool-call+json': {
        call_id: 'c1',
        tool: 'run_shell_command',
        status
      },
      'text/plain': 'card'
    },
    transient: { display_id: 'd1' }
  });

  it('is waiting while the card asks, and not once it is decided', () => {
    expect(
      approvalFromMessage(message('display_data', card('waiting')))
    ).toEqual({ callId: 'c1', tool: 'run_shell_command', waiting: true });
    for (const status of ['running', 'ok', 'denied', 'interrupted']) {
      expect(
        approvalFromMessage(message('update_display_data', card(status)))
      ).toEqual({ callId: 'c1', tool: 'run_shell_command', waiting: false });
    }
  });

  it('is absent for other outputs and other messages', () => {
    expect(
      approvalFromMessage(
        message('display_data', { data: { 'text/plain': 'hi' } })
      )
    ).toBeNull();
    expect(approvalFromMessage(message('display_data', {}))).toBeNull();
    expect(
      approvalFromMessage(message('execute_result', card('waiting')))
    ).toBeNull();
    expect(approvalFromMessage(message('stream', { text: 'x' }))).toBeNull();
  });
});

describe('activity endpoint', () => {
  it('puts only the filters that are set in the query', () => {
    expect(activityPath({})).toBe('co-kernel/activity');
    expect(
      activityPath({
        session: 's 1',
        tool: '',
        decision: 'denied',
        since: 12.5,
        limit: 10
      })
    ).toBe(
      'co-kernel/activity?session=s+1&decision=denied&since=12.5&limit=10'
    );
  });
});
