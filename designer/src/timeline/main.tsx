// Timeline page entry: mounts the live execution timeline.
import { createRoot } from 'react-dom/client';

createRoot(document.getElementById('root')!).render(<div>Timeline</div>);
