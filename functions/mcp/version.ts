import { name, version } from '../../package.json';

/** The server's name and version, as announced in `initialize` and `/health`. */
export const SERVER_INFO = Object.freeze({ name, version });
