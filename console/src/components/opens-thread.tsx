import type { ComponentChildren } from "preact";

/**
 * A message's row, made one button that opens its thread (a click anywhere on it, or Enter
 * and Space once focused). The button lays out nothing of its own (`display: contents`): the
 * row's grid places its pieces. A row with no thread (a member or task event) is left as is.
 */
export function OpensThread({
  thread,
  onOpen,
  children,
}: {
  thread: string | undefined;
  onOpen(threadId: string): void;
  children: ComponentChildren;
}) {
  if (!thread) return <>{children}</>;
  return (
    <button
      type="button"
      class="opens-thread"
      title="open its thread"
      onClick={() => onOpen(thread)}
    >
      {children}
    </button>
  );
}
