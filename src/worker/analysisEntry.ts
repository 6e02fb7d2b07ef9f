import { runAnalysisThread } from './analysis';

// The analysis thread's own bundle (dist/analysis.js): the parser, extraction and URL rules, nothing else. A
// thread started from dist/worker.js loaded and initialised BullMQ, ioredis and undici it never uses (3.8 MB,
// ~240 ms before the first page could be parsed); this bundle is a tenth of that.
runAnalysisThread();
