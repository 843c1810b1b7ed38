/**
 * 200 MB each way through get_file_url on the E2B backend (test/support/e2b-file-url-suite.ts): E2B's own signed
 * URLs and the server's own, through the built bundle and the real SDK against the local E2B service.
 */
import { describeTransfers, MB } from '../support/e2b-file-url-suite';
import { serviceDescribe } from '../support/e2b-wire';

serviceDescribe("E2B's own signed URLs, 200 MB (MCP_FILE_URLS=auto, secure sandboxes)", () => {
  describeTransfers(200 * MB, { origin: 'backend', uploadMethod: 'POST' });
});

serviceDescribe("the server's own URLs on E2B, 200 MB (MCP_FILE_URLS=server)", () => {
  describeTransfers(200 * MB, { origin: 'server', uploadMethod: 'PUT' });
});
