/** Request and response schemas shared by routes. Lengths bound every string (D4 over-long). */
import { Type } from "typebox";

export const EmailField = Type.String({ minLength: 1, maxLength: 320 });
export const NameField = Type.String({ minLength: 1, maxLength: 200 });
export const PasswordField = Type.String({ minLength: 1, maxLength: 256 });
export const TokenField = Type.String({ minLength: 1, maxLength: 128 });
export const RecordIdField = Type.String({ minLength: 1, maxLength: 20 });
export const BotField = Type.Optional(Type.String({ maxLength: 4096 }));
export const TwoFactorCodeField = Type.Optional(Type.String({ minLength: 1, maxLength: 32 }));

export const ErrorBody = Type.Object({
  success: Type.Literal(false),
  code: Type.String(),
  message: Type.String(),
  requestId: Type.String(),
  authorized: Type.Optional(Type.Literal(false)),
  details: Type.Optional(Type.Unknown()),
});

export const MessageBody = Type.Object({ success: Type.Literal(true), message: Type.String() });

export const TenantHeaders = Type.Object({ "x-tenant-domain": Type.Optional(Type.String({ maxLength: 253 })) });
