// Designer page entry: takes an admin token from the URL, wires the store to the browser (fetch-based api, localStorage, window timers, clipboard), seeds it with the R-Stitch example unless a draft is stored, installs the test hook, mounts the editor.
import '@xyflow/react/dist/style.css';
import { createRoot } from 'react-dom/client';
import { adoptTokenFromUrl } from '../adminToken.ts';
import { api, evaluateApi, streamChat } from './api.ts';
import { App } from './App.tsx';
import type { DesignerPorts, DraftStorage } from './designerPorts.ts';
import { DesignerStore } from './designerStore.ts';
import { EvaluateFlow } from './evaluateFlow.ts';
import '../base.css';
import './designer.css';
import { EXAMPLES } from './examples.ts';
import { installTestHook } from './testHook.ts';

function browserStorage(): DraftStorage | null {
  try {
    return window.localStorage;
  } catch {
    return null; // storage blocked (privacy settings): drafts stay in memory
  }
}

function browserPorts(): DesignerPorts {
  return {
    server: { ...api, streamChat },
    storage: browserStorage(),
    clock: {
      now: () => Date.now(),
      after: (ms, fn) => {
        const t = window.setTimeout(fn, ms);
        return () => window.clearTimeout(t);
      },
    },
    // Absent outside secure contexts (plain http on a non-loopback host).
    clipboard: (navigator.clipboard as Clipboard | undefined) ?? null,
  };
}

// A link with #token=… (the server's start-up line) keeps the token and leaves it out of history.
adoptTokenFromUrl(location, history);
const store = new DesignerStore(EXAMPLES[0].graph, browserPorts());
const evaluation = new EvaluateFlow(evaluateApi);
installTestHook(store, evaluation);
createRoot(document.getElementById('root')!).render(<App store={store} evaluation={evaluation} />);
