// Designer page entry: creates the store (draft from localStorage, else the R-Stitch example), installs the test hook, mounts the editor.
import '@xyflow/react/dist/style.css';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { DesignerStore, type DraftStorage } from './designerStore.ts';
import './designer.css';
import { EXAMPLES } from './examples.ts';
import { installTestHook } from './testHook.ts';

function browserStorage(): DraftStorage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

const store = new DesignerStore(EXAMPLES[0].graph, browserStorage());
installTestHook(store);
createRoot(document.getElementById('root')!).render(<App store={store} />);
