// Designer page entry: mounts the algorithm editor.
import { createRoot } from 'react-dom/client';

createRoot(document.getElementById('root')!).render(<div>Designer</div>);
