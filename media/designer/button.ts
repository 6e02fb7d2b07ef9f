// A vscode-elements button with a codicon.

export function button(label: string, iconName: string, onClick: () => void, secondary = false): HTMLElement {
  const b = document.createElement('vscode-button');
  b.textContent = label;
  b.setAttribute('icon', iconName);
  if (secondary) b.setAttribute('secondary', '');
  b.addEventListener('click', onClick);
  return b;
}
