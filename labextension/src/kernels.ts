/**
 * Following the kernel of every open notebook. The status item, the approvals
 * comm and the placing of other pages' outputs each watch the same kernels
 * for their own reasons; this keeps the connecting and disconnecting in one
 * place.
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

/** What a watcher of the notebooks' kernels is told; each part is optional. */
export interface IKernelWatcher {
  /**
   * A notebook has a new kernel connection, or none (`null`): at the start,
   * and after each change of its session or kernel.
   */
  attached?(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection | null
  ): void;
  /** A message the page received from a notebook's kernel. */
  received?(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection,
    msg: KernelMessage.IMessage
  ): void;
  /** A notebook's kernel changed its state (`kernel.status`). */
  statusChanged?(panel: NotebookPanel, kernel: Kernel.IKernelConnection): void;
  /** The notebook was closed. */
  closed?(panel: NotebookPanel): void;
}

/** Tell `watcher` about the kernels of the open notebooks and of later ones. */
export function followKernels(
  tracker: INotebookTracker,
  watcher: IKernelWatcher
): void {
  tracker.widgetAdded.connect((_, panel) => watch(panel, watcher));
  tracker.forEach(panel => watch(panel, watcher));
}

function watch(panel: NotebookPanel, watcher: IKernelWatcher): void {
  const context = panel.sessionContext;
  let kernel: Kernel.IKernelConnection | null = null;
  const onMessage = (
    connection: Kernel.IKernelConnection,
    args: Kernel.IAnyMessageArgs
  ): void => {
    if (args.direction === 'recv') {
      watcher.received?.(panel, connection, args.msg);
    }
  };
  const onStatus = (connection: Kernel.IKernelConnection): void => {
    watcher.statusChanged?.(panel, connection);
  };
  const detach = (): void => {
    kernel?.anyMessage.disconnect(onMessage);
    kernel?.statusChanged.disconnect(onStatus);
  };
  const attach = (): void => {
    detach();
    kernel = context.session?.kernel ?? null;
    kernel?.anyMessage.connect(onMessage);
    kernel?.statusChanged.connect(onStatus);
    watcher.attached?.(panel, kernel);
  };
  context.kernelChanged.connect(attach);
  context.sessionChanged.connect(attach);
  panel.disposed.connect(() => {
    detach();
    watcher.closed?.(panel);
  });
  attach();
}
