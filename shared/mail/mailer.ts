// The one way the platform sends email (invitations, password resets): SMTP through nodemailer when SMTP_URL is set,
// else the sandbox inbox (GET /v1/sandbox/inbox?email=...), the default like every provider's sandbox. Links inside
// messages are built by the caller from PUBLIC_URL (ctx.baseUrl), never from a request's Host header.
import nodemailer from 'nodemailer';
import type { Config } from '../config.ts';
import type { Db } from '../db.ts';
import { deliverToInbox } from '../sandbox/inbox.ts';

export interface MailMessage {
  /** The organization the message is about (the sandbox inbox entry belongs to it). */
  organizationId: string;
  to: string;
  subject: string;
  text: string;
  /** What produced it, e.g. invitation or password_reset (the sandbox entry's kind). */
  kind: string;
}

export interface Mailer { send(m: MailMessage): Promise<void> }

class SandboxMailer implements Mailer {
  constructor(private readonly db: Db) {}
  async send(m: MailMessage): Promise<void> {
    await deliverToInbox(this.db, { organizationId: m.organizationId, phoneNumber: m.to, channel: 'email', kind: m.kind,
      text: m.text, subject: m.subject });
  }
}

class SmtpMailer implements Mailer {
  private readonly transport;
  constructor(url: string, private readonly from: string) {
    this.transport = nodemailer.createTransport(url);
  }
  async send(m: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: m.to, subject: m.subject, text: m.text });
  }
}

/** The process's mailer (made once, by the composition root): SMTP when SMTP_URL is set, else the sandbox inbox. */
export function createMailer(config: Config, db: Db): Mailer {
  return config.console.smtpUrl ? new SmtpMailer(config.console.smtpUrl, config.console.mailFrom) : new SandboxMailer(db);
}
