// Build of the web app: the designer at / and the timeline at /timeline, served by the runtime's server.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname);

export default defineConfig({
  root,
  plugins: [react()],
  build: {
    outDir: resolve(root, 'dist'),
    emptyOutDir: true,
    rollupOptions: {
      input: { designer: resolve(root, 'index.html'), timeline: resolve(root, 'timeline.html') },
    },
  },
});
