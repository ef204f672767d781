import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/** A form's submission: `busy` while it runs, `error` its answer in words. `run(e, fn)` stops the browser's own submit,
 *  clears the last error and runs fn, which answers an error message (or nothing when it succeeded); a request that
 *  never reached the server says so. */
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (e: Event, fn: () => Promise<string | null | void>) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const message = await fn();
      if (message) setError(message);
    } catch {
      setError('The server could not be reached.');
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}

/** A modal confirmation (<dialog>: focus is trapped and Escape cancels). */
export function Confirm({ title, children, confirmLabel, onConfirm, onCancel, busy }: {
  title: string; children: ComponentChildren; confirmLabel: string; onConfirm: () => void; onCancel: () => void; busy?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    if (!d.open) d.showModal();
    return () => d.close();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={(e) => { e.preventDefault(); onCancel(); }}>
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>{confirmLabel}</button>
        <button type="button" class="secondary" onClick={onCancel}>Cancel</button>
      </div>
    </dialog>
  );
}

/** A wide table that scrolls sideways on a narrow screen (focusable, so the keyboard can scroll it too). */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  return <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>{children}</div>;
}

export function Loading({ what }: { what: string }) {
  return <p role="status" class="loading">Loading {what}…</p>;
}

export function ErrorLine({ message, retry }: { message: string; retry?: () => void }) {
  return (
    <div role="alert" class="error">
      <p>{message}</p>
      {retry && <button type="button" class="secondary" onClick={retry}>Try again</button>}
    </div>
  );
}
