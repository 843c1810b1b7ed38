/**
 * What to do about an FC API error, by its code: the message an operator needs next to the code and request id.
 */
'use strict';

/**
 * Codes (exact, or a prefix ending in `.`) and the advice for them.
 * @type {ReadonlyArray<readonly [codes: readonly string[], hint: string]>}
 */
const HINTS = [
  [
    ['AccessDenied', 'Forbidden.', 'NoPermission', 'Forbidden'],
    'The credentials lack permission: grant the RAM user or role AliyunFCFullAccess (or fc:GetFunction, ' +
      'fc:CreateFunction, fc:UpdateFunction, fc:GetTrigger, fc:CreateTrigger, fc:UpdateTrigger and the ' +
      'custom-domain actions), then re-run.',
  ],
  [
    ['InvalidAccessKeyId', 'InvalidAccessKeyId.', 'SignatureDoesNotMatch', 'IncompleteSignature'],
    'FC did not accept the credentials: check ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET ' +
      '(copy them again from the RAM console; no spaces).',
  ],
  [
    ['InvalidSecurityToken', 'InvalidSecurityToken.', 'SecurityTokenExpired'],
    'The STS token is invalid or expired: get a new one and set ALIBABA_CLOUD_SECURITY_TOKEN (or unset it to use ' +
      'a plain AccessKey).',
  ],
  [
    ['FunctionNotFound', 'TriggerNotFound', 'DomainNameNotFound'],
    'The resource disappeared during the deploy (removed by someone else?): re-run the deploy.',
  ],
  [
    ['InvalidArgument', 'InvalidParameter', 'ValidationError', 'MissingParameter', 'BadRequest'],
    'FC rejected a setting; the message above names it. Adjust the matching option and re-run.',
  ],
  [
    ['ResourceExhausted', 'ResourceThrottled', 'QuotaExceeded', 'LimitExceeded'],
    'An account quota is exhausted: raise it in the Quota Center, or free resources, then re-run.',
  ],
  [
    ['DomainNameNotResolved', 'DomainNameNotCNAME', 'CustomDomainNameNotResolved'],
    'The custom domain does not yet CNAME to <account-id>.<region>.fc.aliyuncs.com: add the DNS record, wait for ' +
      'it to resolve, then re-run.',
  ],
  [['Throttling', 'Throttling.'], 'FC kept throttling the calls: wait a minute and re-run.'],
];

/**
 * @param {string} code
 * @param {number | undefined} statusCode
 * @returns {string}
 */
function toErrorHint(code, statusCode) {
  for (const [codes, hint] of HINTS) {
    if (codes.some((c) => (c.endsWith('.') ? code.startsWith(c) : code === c))) return hint;
  }
  if (statusCode === undefined)
    return 'The FC API could not be reached: check the network, --region and --endpoint, then re-run.';
  if (statusCode >= 500)
    return (
      'FC kept failing on its side: re-run in a few minutes; ' + 'if it persists, open a ticket quoting the request id.'
    );
  return (
    'See the message above; fix the cause and re-run (the deploy is idempotent). Quote the request id if you open ' +
    'a ticket.'
  );
}

module.exports = { toErrorHint };
