/**
 * The two RPC-style APIs the deploy needs beside FC, served by the fake at `/` and told apart by x-acs-action (signed
 * the same ACS3 way; openapi-core's callApi with style RPC puts the parameters in the query):
 * - Resource Manager 2020-03-31, FC's service-linked role. CheckServiceLinkedRoleExistence is not in the published
 *   SDK: its shape (ServiceName in, Exists out) is the one fc3 calls through @serverless-cd/srm-aliyun-ram20150501.
 *   CreateServiceLinkedRole answers RequestId and Role {RoleName, Arn, …}
 *   (https://www.alibabacloud.com/help/doc-detail/171226.htm).
 * - Certificate Management Service 2020-04-07, GetUserCertificateDetail: CertId in; Name, Cert and Key out
 *   (https://help.aliyun.com/document_detail/465112.html).
 */
import { type Answer, type FcRequest, type FcState, ok, refuse } from './fake-fc-state';

/** The only service whose linked role the fake models. */
const FC_SERVICE = 'fc.aliyuncs.com';
const ROLE_NAME = 'AliyunServiceRoleForFC';

function serviceName(req: FcRequest): string | Answer {
  const name = req.query.ServiceName;
  if (name === undefined || name === '') return refuse(400, 'MissingParameter', 'ServiceName is required');
  return name === FC_SERVICE
    ? name
    : refuse(400, 'InvalidParameter.ServiceName', `the fake knows the linked role of ${FC_SERVICE} only, not ${name}`);
}

function checkRole(state: FcState, req: FcRequest): Answer {
  const name = serviceName(req);
  return typeof name === 'string' ? ok({ Exists: state.serviceLinkedRole }) : name;
}

/** RAM's date format: ISO 8601 without milliseconds. */
const ramDate = (iso: string): string => iso.replace(/\.\d{3}Z$/, 'Z');

function createRole(state: FcState, req: FcRequest): Answer {
  const name = serviceName(req);
  if (typeof name !== 'string') return name;
  if (state.serviceLinkedRole) return refuse(409, 'EntityAlreadyExists.Role', `the role ${ROLE_NAME} already exists`);
  state.serviceLinkedRole = true;
  return ok({
    Role: {
      RoleId: `3${state.accountId}`,
      RoleName: ROLE_NAME,
      Arn: `acs:ram::${state.accountId}:role/${ROLE_NAME.toLowerCase()}`,
      Description:
        'Service Linked Role for Function Compute. Function Compute will use this role to access your resources in ' +
        'other services.',
      AssumeRolePolicyDocument: JSON.stringify({
        Statement: [{ Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: [FC_SERVICE] } }],
        Version: '1',
      }),
      IsServiceLinkedRole: true,
      CreateDate: ramDate(req.now),
      RolePrincipalName: `${ROLE_NAME}@role.${state.accountId}.onaliyunservice.com`,
    },
  });
}

/** CertFilter=true leaves the PEM out, as CAS does. */
function certificateDetail(state: FcState, req: FcRequest): Answer {
  const id = req.query.CertId;
  if (id === undefined || id === '') return refuse(400, 'MissingParameter', 'CertId is required');
  const certificate = state.certificates.get(id);
  if (certificate === undefined) return refuse(404, 'CertificateNotFound', `certificate ${id} does not exist`);
  return ok({
    Id: Number(id),
    Name: certificate.name,
    CertIdentifier: `${id}-cn-hangzhou`,
    ...(req.query.CertFilter !== 'true' && { Cert: certificate.cert, Key: certificate.key }),
  });
}

/** Each RPC action with its API version and handler. */
export const RPC_ACTIONS: Record<string, { version: string; handle(state: FcState, req: FcRequest): Answer }> = {
  CheckServiceLinkedRoleExistence: { version: '2020-03-31', handle: checkRole },
  CreateServiceLinkedRole: { version: '2020-03-31', handle: createRole },
  GetUserCertificateDetail: { version: '2020-04-07', handle: certificateDetail },
};
