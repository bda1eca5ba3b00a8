/**
 * A unified diff (the `detail` of a file edit) as coloured lines.
 */

/** The kind of one diff line. */
export type DiffLineKind = 'add' | 'del' | 'hunk' | 'meta' | 'context';

/** One line of a unified diff. */
export interface IDiffLine {
  /** What the line is. */
  kind: DiffLineKind;
  /** The line as written, marker included. */
  text: string;
}

/** Whether a text looks like a unified diff (hunk headers or file headers). */
export function isUnifiedDiff(text: string): boolean {
  return /^@@ .* @@/m.test(text) || /^--- .*\n\+\+\+ /m.test(text);
}

/** Classify each line of a unified diff. */
export function parseDiff(text: string): IDiffLine[] {
  const lines = text.replace(/\n$/, '').split('\n');
  return lines.map(line => {
    let kind: DiffLineKind = 'context';
    if (line.startsWith('+++ ') || line.startsWith('--- ')) {
      kind = 'meta';
    } else if (line.startsWith('@@')) {
      kind = 'hunk';
    } else if (line.startsWith('+')) {
      kind = 'add';
    } else if (line.startsWith('-')) {
      kind = 'del';
    } else if (line.startsWith('diff ') || line.startsWith('\\ ')) {
      kind = 'meta';
    }
    return { kind, text: line };
  });
}

/** Added and removed line counts. */
export function diffStats(lines: IDiffLine[]): {
  added: number;
  removed: number;
} {
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line.kind === 'add') {
      added += 1;
    } else if (line.kind === 'del') {
      removed += 1;
    }
  }
  return { added, removed };
}

/** The diff as a `<pre>` with one classed block per line (text only, never HTML). */
export function renderDiff(
  text: string,
  doc: Document = document
): HTMLElement {
  const pre = doc.createElement('pre');
  pre.className = 'co-Diff';
  for (const line of parseDiff(text)) {
    const span = doc.createElement('span');
    span.className = `co-Diff-line co-Diff-${line.kind}`;
    span.textContent = line.text === '' ? ' ' : line.text;
    pre.appendChild(span);
  }
  return pre;
}
