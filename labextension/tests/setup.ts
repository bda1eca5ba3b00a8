// jsdom has no DragEvent; @lumino/dragdrop (loaded with @lumino/widgets) subclasses it.
if (typeof globalThis.DragEvent === 'undefined') {
  class DragEvent extends MouseEvent {}
  Object.assign(globalThis, { DragEvent });
}
