/**
 * The scripted user of the test OpenID provider: a GET on an interaction's URL finishes it at once, no page shown.
 * The provider asks twice per authorization: "login" (answered with the configured account), then "consent"
 * (answered by granting everything it reports missing: OpenID scopes and claims, and each resource's scopes).
 * Either answer is a 303 back into the authorization flow, which ends in a redirect to the client's redirect_uri.
 */

/** Answers the interaction whose cookie `req` carries; oidc-provider writes the 303 on `res`. */
export async function finishInteraction(provider, accountId, req, res) {
  const interaction = await provider.interactionDetails(req, res);
  const { prompt, params, session, grantId } = interaction;

  if (prompt.name === 'login') {
    // mergeWithLastSubmission false: a fresh login, nothing carried over from an earlier answer.
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }

  if (prompt.name === 'consent') {
    // The existing grant of this account and client, if the provider found one; else a new one.
    const grant =
      grantId === undefined
        ? new provider.Grant({ accountId: session.accountId, clientId: params.client_id })
        : await provider.Grant.find(grantId);
    if (grant === undefined) throw new Error(`grant ${grantId} not found`);
    const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
    if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
    if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missingResourceScopes ?? {}))
      grant.addResourceScope(resource, scopes.join(' '));
    const savedGrantId = await grant.save();
    // mergeWithLastSubmission true keeps the login answered a step before.
    await provider.interactionFinished(
      req,
      res,
      { consent: { grantId: savedGrantId } },
      { mergeWithLastSubmission: true },
    );
    return;
  }

  throw new Error(`unexpected interaction prompt "${prompt.name}"`);
}
