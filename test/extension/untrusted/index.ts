// Entry point of the untrusted-workspace suite: the same runner as the main suite, over the test files next to
// this one. scripts/code-server/run-extension-tests.mjs opens test/extension/fixtures/untrusted with Workspace
// Trust on, so the folder is in restricted mode, as a freshly cloned repository is.
export { run } from '../suite/index';
