// The designer's command ids; light enough to load at activation.
export const COMMANDS = {
  openPreview: 'crawlStudio.designer.openPreview',
  pickSelector: 'crawlStudio.designer.pickSelector',
  insertSelector: 'crawlStudio.designer.insertSelector',
  newTaskFile: 'crawlStudio.designer.newTaskFile',
  savePageAsFixture: 'crawlStudio.designer.savePageAsFixture',
  testTask: 'crawlStudio.designer.testTask',
} as const;

/** The preview's webview type: its serializer brings previews back after a window reload. */
export const PREVIEW_VIEW_TYPE = 'crawlStudio.designer.preview';

/** Test hooks (see testHooks.ts): the preview's state, a message as if from the webview, a pick by selector. */
export const TEST_COMMANDS = {
  state: 'crawlStudio.designer._state',
  message: 'crawlStudio.designer._message',
  pick: 'crawlStudio.designer._pick',
} as const;
