// Timeline page entry: takes an admin token from the URL, picks the source (?trace=<url>, ?demo=<events/s>, else the live feed), ?request=<id> to select, and mounts the page.
import { createRoot } from 'react-dom/client';
import { adoptTokenFromUrl } from '../adminToken.ts';
import { App } from './App.tsx';
import { installTestHook } from './testHook.ts';
import { TimelineController } from './timelineController.ts';
import '../base.css';
import './timeline.css';

// A link with #token=… (the server's start-up line) keeps the token and leaves it out of history.
adoptTokenFromUrl(location, history);
const params = new URLSearchParams(location.search);
const cap = Number(params.get('cap')) || 200_000;
const controller = new TimelineController(cap);
installTestHook(controller);

const trace = params.get('trace');
const demo = params.get('demo');
if (trace) void controller.loadUrl(trace);
else if (demo !== null) controller.startDemo(Number(demo) || 2000);
else controller.startLive();
const request = params.get('request');
if (request) controller.selectWhenSeen(request);

createRoot(document.getElementById('root')!).render(<App c={controller} />);
