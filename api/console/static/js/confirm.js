// confirmAction asks before a state-changing action, in a modal dialog: Cancel has the focus, so
// Enter does not confirm by accident; Escape cancels. It answers true when confirmed.
export function confirmAction(title, text, confirmLabel) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  const ok = document.getElementById('confirm-ok');
  const cancel = document.getElementById('confirm-cancel');
  ok.textContent = confirmLabel;
  return new Promise((resolve) => {
    const done = (answer) => {
      ok.removeEventListener('click', onOK);
      cancel.removeEventListener('click', onCancel);
      dialog.removeEventListener('close', onClose);
      if (dialog.open) {
        dialog.close();
      }
      resolve(answer);
    };
    const onOK = () => done(true);
    const onCancel = () => done(false);
    const onClose = () => done(false);
    ok.addEventListener('click', onOK);
    cancel.addEventListener('click', onCancel);
    dialog.addEventListener('close', onClose);
    dialog.showModal();
    cancel.focus();
  });
}
