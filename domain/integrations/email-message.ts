/** A plain-text email as the send_email tool receives it. */
export interface OutgoingEmail {
  to: string[];
  cc?: string[];
  bcc?: string[];
  subject: string;
  text: string;
}

// Deliberately simple: one address, no display name, nothing that could end a header line.
const ADDRESS = /^[^\s@<>,;:"()[\]\\]+@[^\s@<>,;:"()[\]\\]+\.[^\s@<>,;:"()[\]\\]+$/;
const MAX_RECIPIENTS = 100;
const MAX_SUBJECT = 998;

/** Explains what is wrong with an email, naming the field, or returns undefined. */
export function emailProblem(email: OutgoingEmail): string | undefined {
  const lists = { to: email.to, cc: email.cc ?? [], bcc: email.bcc ?? [] };
  if (lists.to.length === 0) return 'to needs at least one address';
  if (lists.to.length + lists.cc.length + lists.bcc.length > MAX_RECIPIENTS) return `at most ${MAX_RECIPIENTS} recipients`;
  for (const [field, addresses] of Object.entries(lists)) {
    const bad = addresses.find((address) => !ADDRESS.test(address));
    if (bad !== undefined) return `${field}: '${bad}' is not an email address`;
  }
  // A line break in the subject would let a caller add headers of its own.
  if (/[\r\n]/.test(email.subject)) return 'subject must be one line';
  if (email.subject.length > MAX_SUBJECT) return `subject must be at most ${MAX_SUBJECT} characters`;
  return undefined;
}

/** RFC 2047 encoded-word for header text that is not plain ASCII. */
export function encodeHeaderText(text: string): string {
  return /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text, 'utf8').toString('base64')}?=`;
}

/**
 * The RFC 5322 message for an email: UTF-8 text, base64 transfer encoding so that any body is
 * safe. The provider sets From to the connected account.
 */
export function buildMimeMessage(email: OutgoingEmail): string {
  const headers = [
    `To: ${email.to.join(', ')}`,
    ...(email.cc?.length ? [`Cc: ${email.cc.join(', ')}`] : []),
    ...(email.bcc?.length ? [`Bcc: ${email.bcc.join(', ')}`] : []),
    `Subject: ${encodeHeaderText(email.subject)}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset="UTF-8"',
    'Content-Transfer-Encoding: base64',
  ];
  const body = (Buffer.from(email.text, 'utf8').toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');
  return `${headers.join('\r\n')}\r\n\r\n${body}\r\n`;
}
